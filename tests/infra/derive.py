"""Record what each function calls: every AWS operation and every Kubernetes request, per function.

What runs: the shipped short scenarios (examples/scenarios) and four in tests/infra/scenarios,
through the simulator with `kube_api: http`, so the real handlers, controllers and adapters call
moto through boto3 and the API emulator through the real kubernetes client; then each function's
cold start (`*_from_settings`, the production composition root) against moto, and the
interruption function's deduplicator on a failed and a redelivered event.

What is observed:
  * AWS: a botocore `before-parameter-build` handler added to botocore's built-in handlers, so
    every client of every session created while recording is seen (the simulator's, Powertools',
    the cold start's). A call belongs to the function whose invocation thread made it (the
    simulator names each thread `<function>-<request id>`, nodewright.simulator.standins.lambdas), or to
    the function a probe runs as (`Recorder.acting_as`). The world's own calls (creating the
    account, polling the queue) run on no function's thread and are not counted.
  * Kubernetes: `RESTClientObject.request` of the kubernetes client, wrapped; a request belongs to
    the function whose adapter (one per function, nodewright.simulator.standins.kubehttp) owns the client,
    watch threads included.

Where the simulator stands in for a real call to keep a day's run fast, the stand-in is wrapped
so that the first time a function reaches it, the real adapter's method runs too and its calls
are recorded (against moto or the emulator; a failure after the call was sent is fine, the call
is what needs the grant):
  * MirroredCloud.instances -> the Ec2CloudProvider it decorates (DescribeInstances);
  * MirroredStateStore's reads -> the DynamoStateStore it decorates (Query);
  * SimCatalog -> LiveCatalog (instance types, offerings, spot and on-demand prices);
  * StaticConfiguration -> the config table (ConfigStore.list) and the CRDs (read_config);
  * PublicParameters for /aws/service/ names -> ssm GetParameter;
  * SimulatedLambda.invoke -> lambda Invoke;
  * the simulator resolves AMIs by alias only: NodeClassResolver.images -> also by name
    (amiSelectorTerms with id, name or tags: DescribeImages).
An Event series is patched only when its Event recurs past its reason's window, which a short
scenario may not reach: the first Event each adapter creates is also patched once (a PATCH of
events.k8s.io events, as a recurring one would send).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import botocore.handlers
from kubernetes.client import rest

from infra.grants import KubeAccess, Operation, kube_accesses

REPO_ROOT = Path(__file__).resolve().parents[2]
# The shipped short scenarios, and three for paths they do not take (see each file's header):
# the consolidator's replace, the provisioner's registration timeout, a spot warning that blocks
# its offering.
SHIPPED = ("scale-up", "spot-storm", "zone-outage", "limits", "standby")
SCENARIOS = (
    *(REPO_ROOT / "examples" / "scenarios" / f"{name}.yaml" for name in SHIPPED),
    *(
        REPO_ROOT / "tests" / "infra" / "scenarios" / f"{name}.yaml"
        for name in ("scale-down", "never-ready", "spot-warning", "dra")
    ),
)
FUNCTIONS = ("provisioner", "interruption", "consolidator")
TABLES = {"nodewright-state": "state", "nodewright-idempotency": "idempotency", "nodewright-config": "config"}


@dataclass
class Recorder:
    """AWS operations and Kubernetes permissions per function (see the module docstring)."""

    aws: dict[str, set[Operation]] = field(default_factory=lambda: {f: set() for f in FUNCTIONS})
    kube: dict[str, set[KubeAccess]] = field(default_factory=lambda: {f: set() for f in FUNCTIONS})
    unattributed: set[Operation] = field(default_factory=set)
    _local: threading.local = field(default_factory=threading.local)
    _clients: dict[int, str] = field(default_factory=dict)
    _adapters: dict[str, Any] = field(default_factory=dict)
    _probed: set[tuple[str, str]] = field(default_factory=set)

    def function(self) -> str | None:
        """The function the current thread acts for, if any ("" while the simulated AWS acts)."""
        acting: str | None = getattr(self._local, "function", None)
        if acting is not None:
            return acting or None
        prefix = threading.current_thread().name.rsplit("-", 1)[0]
        return prefix if prefix in FUNCTIONS else None

    @contextlib.contextmanager
    def acting_as(self, function: str) -> Iterator[None]:
        """Count the calls made in this block as `function`'s."""
        previous = getattr(self._local, "function", None)
        self._local.function = function
        try:
            yield
        finally:
            self._local.function = previous

    def add(self, operation: Operation) -> None:
        """Count one AWS operation for the current function."""
        function = self.function()
        if function is None:
            self.unattributed.add(operation)
        else:
            self.aws[function].add(operation)

    # -- hooks ----------------------------------------------------------------------------------------

    def _before_parameter_build(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        service = model.service_model.service_name
        tables = [params.get("TableName")] if "TableName" in params else list(params.get("RequestItems") or ())
        for item in params.get("TransactItems") or ():
            tables.extend(part.get("TableName") for part in item.values())
        for table in tables or [""]:
            self.add(Operation(service, model.name, TABLES.get(str(table), str(table)) if table else ""))

    def _request(
        self, original: Callable[..., Any], client: Any, method: str, url: str, *args: Any, **kwargs: Any
    ) -> Any:
        query = kwargs.get("query_params") if "query_params" in kwargs else (args[0] if args else None)
        function = self._clients.get(id(client)) or self.function()
        if function is not None:
            content_type = str((kwargs.get("headers") or {}).get("Content-Type") or "")
            self.kube[function].update(kube_accesses(method, url, query, content_type))
        return original(client, method, url, *args, **kwargs)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Record while the block runs (the hooks and stand-in wrappers are removed after)."""
        handler = ("before-parameter-build", self._before_parameter_build)
        botocore.handlers.BUILTIN_HANDLERS.append(handler)
        with contextlib.ExitStack() as stack:
            stack.callback(botocore.handlers.BUILTIN_HANDLERS.remove, handler)
            original = rest.RESTClientObject.request

            def request(client: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
                return self._request(original, client, method, url, *args, **kwargs)

            for target, name, wrapper in self._wrappers(request):
                stack.enter_context(_patched(target, name, wrapper))
            yield

    def _wrappers(self, request: Callable[..., Any]) -> list[tuple[Any, str, Any]]:
        from nodewright.adapters.aws.nodeclass_resolver import STANDARD, NodeClassResolver
        from nodewright.adapters.kube.events import KubeEvents
        from nodewright.controllers.provisionoptions import StaticConfiguration
        from nodewright.model.nodeclass import AMISelectorTerm
        from nodewright.simulator.standins import kubehttp
        from nodewright.simulator.standins.account import (
            MirroredCloud,
            MirroredStateStore,
            PublicParameters,
            SimulatedEc2,
            SimulatedLambda,
        )
        from nodewright.simulator.standins.catalog import SimCatalog
        from nodewright.simulator.world.kubelet import Kubelet
        from nodewright.simulator.world.signals import Ec2Signals

        recorder = self

        def adapter(self: Any, function: str, *args: Any, **kwargs: Any) -> Any:
            made = original_adapter(self, function, *args, **kwargs)
            recorder._adapters[function] = made
            recorder._clients[id(made.transport.api_client.rest_client)] = function
            return made

        original_adapter = kubehttp.HttpCluster.adapter

        def send_event(self: Any, write: Any) -> None:
            original_send_event(self, write)
            if write.verb == "create" and (str(id(self)), "series") not in recorder._probed:
                recorder._probed.add((str(id(self)), "series"))
                with contextlib.suppress(Exception):
                    original_send_event(self, replace(write, verb="patch", count=2))

        original_send_event = KubeEvents._send

        def also(stand_in: Callable[..., Any], real: Callable[..., Any], key: str) -> Callable[..., Any]:
            @functools.wraps(stand_in)
            def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
                function = recorder.function()
                if function is not None and (function, key) not in recorder._probed:
                    recorder._probed.add((function, key))
                    with contextlib.suppress(Exception):
                        real(self, *args, **kwargs)
                return stand_in(self, *args, **kwargs)

            return wrapped

        def get_parameter(self: Any, **request_: Any) -> Any:
            recorder.add(Operation("ssm", "GetParameter"))
            return original_get_parameter(self, **request_)

        original_get_parameter = PublicParameters.get_parameter

        def invoke(self: Any, **request_: Any) -> Any:
            assert request_.get("InvocationType") == "Event", request_
            recorder.add(Operation("lambda", "Invoke"))
            return original_invoke(self, **request_)

        original_invoke = SimulatedLambda.invoke

        def aside(method: Callable[..., Any]) -> Callable[..., Any]:
            """The simulated AWS's own work, even on a function's thread (e.g. the EC2 state-change
            event a termination publishes): no function's call."""

            @functools.wraps(method)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                with recorder.acting_as(""):
                    return method(*args, **kwargs)

            return wrapped

        wrappers: list[tuple[Any, str, Any]] = [
            (rest.RESTClientObject, "request", request),
            (kubehttp.HttpCluster, "adapter", adapter),
            (KubeEvents, "_send", send_event),
            (MirroredCloud, "instances", also(MirroredCloud.instances, MirroredCloud.described, "instances")),
            (PublicParameters, "get_parameter", get_parameter),
            (SimulatedLambda, "invoke", invoke),
            (SimCatalog, "instance_types", also(SimCatalog.instance_types, _live_catalog, "catalog")),
            (StaticConfiguration, "load", also(StaticConfiguration.load, self._stored_config, "config")),
        ]
        # EC2's hooks (the kubelet answers them) and EC2's own events run on a function's thread
        # when its call set them off.
        hooks = ("capacity_error", "price", "spot_depth", "launched", "fleet", "terminating", "terminated")
        wrappers.extend((Kubelet, name, aside(getattr(Kubelet, name))) for name in hooks)
        wrappers.append((Ec2Signals, "put_event", aside(Ec2Signals.put_event)))
        wrappers.append((SimulatedEc2, "_zone", aside(SimulatedEc2._zone)))
        original_images = NodeClassResolver.images

        def by_name(self: Any, *_: Any, **__: Any) -> Any:
            # Past the resolver's cache: the simulated functions share one cloud provider, so a
            # lookup another function made first would otherwise hide this function's call.
            return self._find_images((AMISelectorTerm(name="simulated-eks-node-x86_64"),), STANDARD)

        wrappers.append((NodeClassResolver, "images", also(original_images, by_name, "images")))
        for name in ("claims", "blocked_offerings", "commands"):
            stand_in = getattr(MirroredStateStore, name)
            wrappers.append((MirroredStateStore, name, also(stand_in, _table_read(name), name)))
        return wrappers

    def _stored_config(self, _: Any) -> None:
        """What StoredConfiguration reads instead: the config table, or the CRDs (configSource=crd)."""
        import boto3

        from nodewright.adapters.aws.config_store import ConfigStore
        from nodewright.adapters.kube.claims import KubeClaimObjects
        from nodewright.adapters.kube.configstatus import KubeConfigStatus
        from nodewright.adapters.kube.crd_config import list_podtemplates, read_config
        from nodewright.adapters.kube.store import PODS

        with contextlib.suppress(Exception):
            ConfigStore("nodewright-config", client=boto3.client("dynamodb", region_name="us-east-1")).list()
        function = self.function()
        if function is not None and function in self._adapters:
            adapter = self._adapters[function]
            # CapacityBuffers are read by the functions that watch pods (assembly: buffers=PODS in kinds),
            # and the PodTemplates a buffer names (the scenarios apply none: listed here as when one does).
            buffers = PODS in adapter._kinds
            with contextlib.suppress(Exception):
                read_config(adapter.transport.api_client, include_buffers=buffers)
            if buffers:
                with contextlib.suppress(Exception):
                    list_podtemplates(adapter.transport.api_client)
            if function == "provisioner":  # its NodeClaim mirror writes the NodePools' status
                with contextlib.suppress(Exception):
                    KubeClaimObjects(adapter).put_nodepool_status("default", {"resources": {}})
                # ConfigStatus: the status of the CapacityBuffers and NodeOverlays it read.
                status = KubeConfigStatus(adapter)
                with contextlib.suppress(Exception):
                    status.put_status("CapacityBuffer", "autoscaling.x-k8s.io/v1beta1", "default", "probe", {})
                with contextlib.suppress(Exception):
                    status.put_status("NodeOverlay", "karpenter.sh/v1alpha1", None, "probe", {})


def _table_read(name: str) -> Callable[..., Any]:
    """The DynamoDB store's own read `name`, under the mirror that answers it in a simulation."""

    def read(mirrored: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(mirrored.store, name)(*args, **kwargs)

    return read


def _live_catalog(_: Any, nodeclass: Any) -> None:
    """What the functions' LiveCatalog calls for a NodeClass (moto has no Price List API: the
    GetProducts call is still sent, and recorded, before it fails)."""
    import boto3

    from nodewright.adapters.aws.catalog import LiveCatalog
    from nodewright.adapters.aws.pricing import PriceCache, pricing_client
    from nodewright.adapters.aws.reservations import CapacityReservations
    from nodewright.adapters.clock import SystemClock
    from nodewright.model.nodeclass import SelectorTerm

    ec2 = boto3.client("ec2", region_name="us-east-1")
    clock = SystemClock()
    prices = PriceCache("us-east-1", pricing=pricing_client("us-east-1"), ec2=ec2, clock=clock)
    # The simulated NodeClasses may select no capacity reservation: probe one that does, as a
    # NodeClass with capacityReservationSelectorTerms makes the catalog ask for them.
    if nodeclass is not None and not nodeclass.capacity_reservation_selector_terms:
        probe = (SelectorTerm(tags={"nodewright.io/probe": "*"}),)
        nodeclass = replace(nodeclass, capacity_reservation_selector_terms=probe)
    LiveCatalog(ec2, prices, clock, reservations=CapacityReservations(ec2, clock)).instance_types(nodeclass)


@contextlib.contextmanager
def _patched(target: Any, name: str, value: Any) -> Iterator[None]:
    # The attribute may be inherited (e.g. a hook `Ec2Hooks` answers by default): shadow it on
    # `target` and remove the shadow after, rather than copy it down.
    own = name in target.__dict__
    original = target.__dict__.get(name)
    setattr(target, name, value)
    try:
        yield
    finally:
        if own:
            setattr(target, name, original)
        else:
            delattr(target, name)


def cold_start(recorder: Recorder) -> None:
    """Each function's composition root, as a Lambda cold start runs it, against moto: it asks
    EKS for the cluster first (moto has none, so the cold start stops there, after the call)."""
    from moto import mock_aws

    from nodewright.controllers import assembly
    from nodewright.controllers.observe import RecordingObserver
    from nodewright.controllers.settings import Settings

    environment = {
        "CLUSTER_NAME": "derived",
        "AWS_REGION": "us-east-1",
        "CONFIG_TABLE_NAME": "nodewright-config",
        "STATE_TABLE_NAME": "nodewright-state",
        "IDEMPOTENCY_TABLE_NAME": "nodewright-idempotency",
    }
    with mock_aws():
        for function in FUNCTIONS:
            build = getattr(assembly, f"{function}_from_settings")
            with recorder.acting_as(function), contextlib.suppress(Exception):
                build(Settings.from_env(environment), RecordingObserver())


def redelivered_events(recorder: Recorder) -> None:
    """The interruption function's deduplicator (Powertools idempotency) on the paths a scenario
    may not take: an event whose handling fails (its record is deleted), then the same event
    delivered twice (the second is answered from the record)."""
    import boto3
    from moto import mock_aws

    from nodewright.adapters.idempotency import EventDeduplicator
    from nodewright.engine.interruption import receive

    event = (REPO_ROOT / "tests" / "events" / "spot_interruption_warning.json").read_text()
    failures = [RuntimeError("first attempt fails")]

    def act(_: object) -> dict[str, Any]:
        if failures:
            raise failures.pop()
        return {"ok": True}

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="nodewright-idempotency",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        once = EventDeduplicator(act, table="nodewright-idempotency", client=client)
        with recorder.acting_as("interruption"), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*remaining time.*")  # no Lambda context here
            for _ in range(3):
                with contextlib.suppress(RuntimeError):
                    once(receive(event))


def stale_node(recorder: Recorder) -> None:
    """The provisioner's housekeeping deletes a Node whose instance is gone, which no scenario
    leaves behind: its reconcile over HTTP against a cluster holding one."""
    import base64

    from nodewright.adapters.kube.client import from_cluster_info
    from nodewright.adapters.kube.cluster import KubeCluster
    from nodewright.controllers.assembly import build_provisioner
    from nodewright.controllers.observe import RecordingObserver
    from nodewright.controllers.provisionoptions import StaticConfiguration
    from nodewright.inmemory.apiserver import ApiServer
    from nodewright.inmemory.catalog import FixedCatalog
    from nodewright.inmemory.clock import VirtualClock
    from nodewright.inmemory.cloud import FakeCloudProvider
    from nodewright.inmemory.cluster import InMemoryCluster
    from nodewright.inmemory.state import InMemoryStateStore
    from nodewright.model import labels as wk
    from nodewright.model.cluster import ClusterInfo
    from nodewright.model.node import Node
    from nodewright.model.nodeclaim import NodeClaim

    clock = VirtualClock(1_767_571_200.0)
    cluster = InMemoryCluster(clock)
    store = InMemoryStateStore()
    # A claim named the instance: a Node is Nodewright's to delete only then (and EC2, asked by id,
    # does not know the instance any more).
    store.create_claim(
        NodeClaim(
            name="default-0123456789",
            nodepool="default",
            state="initialized",
            instance_id="i-0123456789abcdef0",
            provider_id="aws:///us-east-1a/i-0123456789abcdef0",
            node_name="gone",
        )
    )
    cluster.add_node(
        # Labelled as Nodewright labels its nodes: only those are its to delete.
        Node(
            name="gone",
            labels={wk.NODEPOOL: "default", wk.NW_NODEPOOL: "default"},
            provider_id="aws:///us-east-1a/i-0123456789abcdef0",
        )
    )
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
    with ApiServer(cluster) as server, recorder.acting_as("provisioner"):
        kube = KubeCluster.connect(from_cluster_info(ClusterInfo("derived", server.url, ca, "1.31"), lambda: "token"))
        provisioner = build_provisioner(
            cluster=kube,
            cloud=FakeCloudProvider(clock),
            store=store,
            clock=clock,
            config=StaticConfiguration(()),
            catalog=FixedCatalog(()),
            observer=RecordingObserver(),
        )
        assert provisioner.housekeeping.reconcile(kube.snapshot())["stale_nodes"] == 1


def spot_request_status(recorder: Recorder) -> None:
    """The interruption function confirms a spot warning by the spot request's status, which moto
    does not expose (its DescribeInstances names no SpotInstanceRequestId): the EC2 adapter's
    lookup against botocore's Stubber with the documented response shapes."""
    import boto3
    from botocore.stub import Stubber

    from nodewright.adapters.aws.ec2 import Ec2CloudProvider
    from nodewright.inmemory.clock import VirtualClock
    from nodewright.model.cluster import ClusterInfo
    from tests.adapters.aws.fakes import PublicParameters

    # A session of its own: the recording hook reaches only sessions made after it was installed,
    # and boto3's default session may be older (made by another test in this process).
    session = boto3.session.Session()
    ec2 = session.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    instance = {
        "InstanceId": "i-0123456789abcdef0",
        "State": {"Code": 16, "Name": "running"},
        "InstanceLifecycle": "spot",
        "SpotInstanceRequestId": "sir-0123456789abcdef",
    }
    request = {"SpotInstanceRequestId": "sir-0123456789abcdef", "Status": {"Code": "marked-for-termination"}}
    cluster = ClusterInfo("derived", "https://example.invalid", "LS0t", "1.31")
    cloud = Ec2CloudProvider(ec2, PublicParameters(), cluster, instance_profile="p", clock=VirtualClock())
    with Stubber(ec2) as stub, recorder.acting_as("interruption"):
        stub.add_response("describe_instances", {"Reservations": [{"Instances": [instance]}]})
        stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": [request]})
        facts = cloud.instance_facts(["i-0123456789abcdef0"], spot_status=True)
    assert facts["i-0123456789abcdef0"].spot_status == "marked-for-termination"


def record() -> Recorder:
    """Run the shipped scenarios over HTTP and the cold starts, recording (see the module docstring)."""
    from nodewright.simulator.runner import run_scenario
    from nodewright.simulator.scenario import load_scenario

    recorder = Recorder()
    with recorder.installed():
        for path in SCENARIOS:
            scenario = load_scenario(path)
            run_scenario(replace(scenario, kube_api="http"), plots=False)
            recorder._adapters.clear()
        cold_start(recorder)
        redelivered_events(recorder)
        stale_node(recorder)
        spot_request_status(recorder)
    return recorder


if __name__ == "__main__":  # python -m tests.infra.derive: print what each function calls
    derived = record()
    for fn in FUNCTIONS:
        print(f"{fn}:")
        for op in sorted(derived.aws[fn]):
            print(f"  aws  {op.service}.{op.name}{' on ' + op.table if op.table else ''}")
        for access in sorted(derived.kube[fn]):
            print(f"  kube {access}")
