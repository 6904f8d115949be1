"""Model objects to API server JSON and back (nodewright.model.manifests): the parsers read them equal.

Every manifest goes through `json.dumps`/`json.loads` first, as it would over HTTP. Nodes are read
with the adapter's `parse_timestamp`, the way `KubeCluster` reads them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.adapters.kube.cluster import parse_timestamp
from nodewright.model.manifests import (
    MIRROR_ANNOTATION,
    daemonset_manifest,
    format_timestamp,
    node_manifest,
    pdb_manifest,
    pod_manifest,
    quantity,
)
from nodewright.model.node import Node
from nodewright.model.pod import AffinityTerm, Pod, PreferredTerm, SpreadConstraint
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.selectors import Expression, LabelSelector
from nodewright.model.taints import EFFECTS, Taint, Toleration
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from tests.builders import pod


def over_http(manifest: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(json.dumps(manifest))
    return decoded


def read_node(manifest: dict[str, Any]) -> Node:
    manifest = over_http(manifest)
    return Node.parse(manifest, created_at=parse_timestamp(manifest["metadata"].get("creationTimestamp")))


# ---------------------------------------------------------------- examples


def test_an_unschedulable_pod_carries_the_condition_kube_scheduler_writes() -> None:
    manifest = pod_manifest(pod("web-1", cpu="250m", memory="512Mi"))
    assert manifest["status"]["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/0 nodes are available: no node fits the pod.",
        }
    ]
    assert manifest["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "250m", "memory": "512Mi"}}
    assert Pod.parse(over_http(manifest)) == pod("web-1", cpu="250m", memory="512Mi")


def test_a_bound_running_pod_is_scheduled_and_ready() -> None:
    bound = replace(pod("web-1"), node_name="n1", phase="Running", unschedulable=False)
    manifest = pod_manifest(bound)
    assert manifest["spec"]["nodeName"] == "n1"
    assert manifest["status"] == {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
    }


def test_a_mirror_pod_gets_the_annotation_that_makes_it_one() -> None:
    mirror = Pod("kube-system", "kube-proxy-n1", mirror=True, owner_kind="Node", owner_name="n1", node_name="n1")
    manifest = pod_manifest(mirror)
    assert MIRROR_ANNOTATION in manifest["metadata"]["annotations"]
    again = Pod.parse(over_http(manifest))
    assert again.mirror
    assert (again.owner_kind, again.owner_name) == ("Node", "n1")


def test_a_deleting_pod_has_a_deletion_timestamp_and_grace_period() -> None:
    deleting = Pod("default", "web", deleting=True, created_at=1_767_571_200.0, termination_grace_seconds=45)
    metadata = pod_manifest(deleting)["metadata"]
    assert metadata["creationTimestamp"] == "2026-01-05T00:00:00Z"
    assert metadata["deletionTimestamp"] == "2026-01-05T00:00:00Z"
    assert metadata["deletionGracePeriodSeconds"] == 45


def test_timestamps_are_whole_seconds_when_whole_and_microseconds_otherwise() -> None:
    assert format_timestamp(1_767_571_200.0) == "2026-01-05T00:00:00Z"
    assert format_timestamp(1_767_571_200.25) == "2026-01-05T00:00:00.250000Z"
    assert format_timestamp(0.000001) == "1970-01-01T00:00:00.000001Z"


@settings(deadline=None)  # as ROUND_TRIP below: a wall-clock deadline flakes under load
@given(st.floats(min_value=1.0, max_value=4e9))
def test_a_time_off_the_microsecond_grid_comes_back_to_the_nearest_microsecond(seconds: float) -> None:
    again = parse_timestamp(format_timestamp(seconds))
    assert abs(again - seconds) <= 1e-6


def test_quantities_are_exact_and_read_as_people_write_them() -> None:
    assert quantity("cpu", 250) == "250m"
    assert quantity("cpu", 4000) == "4"
    assert quantity("memory", 512 * 2**20 * 1000) == "512Mi"
    assert quantity("memory", 1_000_000 * 1000) == "1000000"
    assert quantity("memory", 1500) == "1500m"
    assert quantity("pods", 58_000) == "58"
    assert quantity("nvidia.com/gpu", 1024 * 1000) == "1024"


def test_a_node_reads_back_equal_with_its_creation_time() -> None:
    node = Node(
        "ip-10-0-1-2.ec2.internal",
        labels={"topology.kubernetes.io/zone": "us-east-1a"},
        taints=(Taint("karpenter.sh/disrupted", "NoSchedule"),),
        capacity=Resources.of(cpu="4", memory="16Gi", pods=58),
        allocatable=Resources.of(cpu="3920m", memory="15Gi", pods=58),
        provider_id="aws:///us-east-1a/i-0abc",
        unschedulable=True,
        ready=True,
        created_at=1_767_571_236.0,
    )
    manifest = node_manifest(node)
    assert manifest["spec"] == {
        "providerID": "aws:///us-east-1a/i-0abc",
        "taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}],
        "unschedulable": True,
    }
    assert manifest["status"]["allocatable"] == {"cpu": "3920m", "memory": "15Gi", "pods": "58"}
    assert read_node(manifest) == node


def test_a_pdb_without_a_selector_selects_nothing_and_keeps_no_selector() -> None:
    budget = PodDisruptionBudget("default", "web", LabelSelector.nothing(), min_available="50%")
    manifest = pdb_manifest(budget, 2)
    assert manifest["spec"] == {"minAvailable": "50%"}
    assert manifest["status"] == {"disruptionsAllowed": 2}
    assert PodDisruptionBudget.parse(over_http(manifest)) == replace(budget, disruptions_allowed=2)


# ---------------------------------------------------------------- properties

# No deadline: a round trip is checked for what it reads back, not for its speed, and a wall-clock
# deadline (200 ms by default) fails at random on a shared, loaded machine. Without one, Hypothesis
# also allows 30 s (not 1 s) of wall time to draw the first ten inputs before its too_slow health
# check fails: a pod is drawn in about 9 ms of CPU, so ten of them need a load far past any
# seen to come near it, while a strategy made much larger by mistake still fails the check.
ROUND_TRIP = settings(deadline=None)

_text = st.text(max_size=8)
_name = st.text(min_size=1, max_size=8)
_labels = st.dictionaries(st.sampled_from(["app", "team", "tier", "example.com/x"]), _text, max_size=3)
# Times on the microsecond grid (see the module docstring): k / 10**6 is the float the parsers
# compute from a timestamp with k microseconds.
_time = st.just(0.0) | st.integers(min_value=1, max_value=4_000_000_000_000_000).map(lambda k: k / 1_000_000)
_milli = st.integers(min_value=0, max_value=2**50)
_resources = st.dictionaries(
    st.sampled_from(["cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu", "pods"]),
    # Up to the 2^63-1 units a Kubernetes quantity holds (a larger amount is refused when read).
    _milli | _milli.map(lambda n: n * 1000) | st.integers(0, 2**40).map(lambda n: n * 2**20 * 1000),
    max_size=5,
).map(Resources)
_keys = st.sampled_from(["k", "topology.kubernetes.io/zone", "karpenter.k8s.aws/instance-cpu", "kubernetes.io/arch"])
_values = st.lists(st.sampled_from(["1", "4", "8", "a", "us-east-1a", "amd64"]), max_size=3)


def _requirement(key: str, operator: str, values: list[str]) -> Requirement:
    if operator in ("Gt", "Lt", "Gte", "Lte"):
        values = [v for v in values if v.isdigit()][:1] or ["4"]
    return Requirement.new(key, operator, values)


_requirements = st.lists(
    st.builds(
        _requirement,
        _keys,
        st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]),
        _values,
    ),
    max_size=4,
).map(Requirements)
_expression = st.builds(
    Expression,
    st.sampled_from(["app", "team"]),
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
    st.frozensets(st.sampled_from(["a", "b", "c"]), max_size=2),
)
# Canonical selectors: match labels sorted by key, as LabelSelector.parse builds them.
_selector = st.builds(
    lambda labels, expressions: LabelSelector(tuple(sorted(labels.items())), tuple(expressions)),
    _labels,
    st.lists(_expression, max_size=2),
)


def _affinity_terms(weighted: bool) -> st.SearchStrategy[tuple[AffinityTerm, ...]]:
    term = st.builds(
        AffinityTerm,
        selector=_selector,
        topology_key=st.sampled_from(["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
        namespaces=st.frozensets(_name, min_size=1, max_size=2),
        all_namespaces=st.booleans(),
        weight=st.integers(0, 100) if weighted else st.just(0),
    )
    return st.lists(term, max_size=2).map(tuple)


_spread = st.builds(
    SpreadConstraint,
    max_skew=st.integers(1, 5),
    topology_key=st.sampled_from(["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
    when_unsatisfiable=st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
    selector=_selector,
    min_domains=st.none() | st.integers(1, 3),
    node_taints_policy=st.sampled_from(["Ignore", "Honor"]),
    node_affinity_policy=st.sampled_from(["Honor", "Ignore"]),
)
_toleration = st.one_of(
    st.builds(
        Toleration,
        key=st.just("") | _name,
        operator=st.just("Exists"),
        effect=st.sampled_from(("", *EFFECTS)),
        toleration_seconds=st.none() | st.integers(0, 3600),
    ),
    st.builds(
        Toleration,
        key=_name,
        operator=st.just("Equal"),
        value=_text,
        effect=st.sampled_from(("", *EFFECTS)),
        toleration_seconds=st.none() | st.integers(0, 3600),
    ),
)
_taint = st.builds(Taint, _name, st.sampled_from(EFFECTS), _text)


# Every strategy a pod is drawn from is built once, here: a strategy built inside the composite
# would be built and validated anew for every pod drawn, which made a pod cost about three times
# what its draws do (and tripped Hypothesis's too_slow health check on a loaded machine).
_pod_annotations = st.dictionaries(st.sampled_from(["a", "karpenter.sh/do-not-disrupt"]), _text, max_size=2)
_required_terms = st.lists(_requirements, max_size=2).map(tuple)
_preferred_terms = st.lists(st.builds(PreferredTerm, st.integers(0, 100), _requirements), max_size=2).map(tuple)
_affinity = _affinity_terms(False)
_weighted_affinity = _affinity_terms(True)
_spreads = st.lists(_spread, max_size=2).map(tuple)
_tolerations = st.lists(_toleration, max_size=3).map(tuple)
_priority = st.integers(-(2**31), 2**31)
_priority_class = st.sampled_from(["", "system-node-critical", "high"])
_owner_kind = st.sampled_from(["", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "Node"])
_phase = st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"])
_grace = st.integers(0, 3600)


@st.composite
def _pods(draw: st.DrawFn) -> Pod:
    """Pods as `Pod.parse` makes them: a pod slot in the requests, namespaces in affinity terms,
    `mirror` exactly when annotated.
    """
    annotations = draw(_pod_annotations)
    mirror = draw(st.booleans())
    if mirror:
        annotations[MIRROR_ANNOTATION] = draw(_text)
    requests = draw(_resources)
    return Pod(
        namespace=draw(_name),
        name=draw(_text),
        uid=draw(_text),
        labels=draw(_labels),
        annotations=annotations,
        requests=requests + Resources({"pods": 1000}),
        node_selector=draw(_labels),
        required_terms=draw(_required_terms),
        preferred_terms=draw(_preferred_terms),
        affinity=draw(_affinity),
        preferred_affinity=draw(_weighted_affinity),
        anti_affinity=draw(_affinity),
        preferred_anti_affinity=draw(_weighted_affinity),
        spread=draw(_spreads),
        tolerations=draw(_tolerations),
        priority=draw(_priority),
        priority_class=draw(_priority_class),
        owner_kind=draw(_owner_kind),
        owner_name=draw(_text),
        node_name=draw(_text),
        nominated_node_name=draw(_text),
        phase=draw(_phase),
        unschedulable=draw(st.booleans()),
        deleting=draw(st.booleans()),
        created_at=draw(_time),
        mirror=mirror,
        termination_grace_seconds=draw(_grace),
    )


pods = _pods()


nodes = st.builds(
    Node,
    name=_name,
    labels=_labels,
    annotations=st.dictionaries(st.sampled_from(["a", "karpenter.sh/do-not-disrupt"]), _text, max_size=2),
    taints=st.lists(_taint, max_size=3).map(tuple),
    capacity=_resources,
    allocatable=_resources,
    provider_id=_text,
    unschedulable=st.booleans(),
    ready=st.booleans(),
    created_at=_time,
    deleting=st.booleans(),
)


@st.composite
def _daemonsets(draw: st.DrawFn) -> DaemonSet:
    """DaemonSets as `DaemonSet.parse` makes them: the template is a Pending pod named after and
    owned by its DaemonSet, with no uid or creation time (templates have none).
    """
    namespace, name = draw(_name), draw(_name)
    template = replace(
        draw(pods),
        namespace=namespace,
        name=f"{name}-template",
        uid="",
        owner_kind="DaemonSet",
        owner_name=name,
        nominated_node_name="",
        phase="Pending",
        unschedulable=False,
        deleting=False,
        created_at=0.0,
    )
    return DaemonSet(namespace, name, template)


daemonsets = _daemonsets()
_budget_value = st.none() | st.integers(0, 10) | st.integers(0, 100).map(lambda n: f"{n}%")
pdbs = st.builds(
    PodDisruptionBudget,
    namespace=_name,
    name=_name,
    selector=_selector | st.just(LabelSelector.nothing()),
    min_available=_budget_value,
    max_unavailable=_budget_value,
    disruptions_allowed=st.none() | st.integers(0, 10),
)


@ROUND_TRIP
@given(pods)
def test_every_pod_reads_back_equal(original: Pod) -> None:
    assert Pod.parse(over_http(pod_manifest(original))) == original


@ROUND_TRIP
@given(nodes)
def test_every_node_reads_back_equal(original: Node) -> None:
    assert read_node(node_manifest(original)) == original


@ROUND_TRIP
@given(daemonsets)
def test_every_daemonset_reads_back_equal(original: DaemonSet) -> None:
    assert DaemonSet.parse(over_http(daemonset_manifest(original))) == original


@ROUND_TRIP
@given(pdbs)
def test_every_pdb_reads_back_equal_with_its_status(original: PodDisruptionBudget) -> None:
    manifest = pdb_manifest(original, original.disruptions_allowed)
    assert PodDisruptionBudget.parse(over_http(manifest)) == original
