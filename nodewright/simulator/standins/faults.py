"""Faults as AWS and EKS produce them, injected into a simulation (the scenario's `faults:`).

Role: decide, per opportunity, whether a fault of the scenario strikes (deterministically, from
the scenario seed, the fault's position and the stream it is drawn for), make the functions meet
it the way they would meet it in AWS, and count what each kind cost. The controllers and
adapters run unchanged; every fault enters at the edge the production code talks to.

Where each kind enters (only calls made by a function's invocation are touched; the world's own
bookkeeping calls never fail):

* AWS (`install`): a `before-send` hook on the moto clients answers in place of moto, with the
  status and body AWS sends: EC2 `RequestLimitExceeded` (503, XML), DynamoDB
  `ProvisionedThroughputExceededException` / `ThrottlingException` (400, JSON). botocore's own
  retries (standard mode, 5 attempts, as `nodewright.adapters.aws.session` configures the
  functions' clients) and the EC2 adapter's `Backoff` then do what they do in AWS. A
  `dynamodb-conditional` fault lets moto apply a conditional write, then loses the answer (a read
  timeout): the SDK retries, and the retry meets `ConditionalCheckFailedException` for the write
  the function itself made, which is how a conditional failure reaches a caller that did nothing
  wrong. `ec2-partial-fleet` is answered by `SimulatedEc2` (fewer instances plus Errors).
* Kubernetes, `kube_api: inmemory` (`kube`): the in-memory cluster does what `KubeCluster` does
  with the answer: a transient one is sent again (each retry a new draw, after the adapter's wait
  on the virtual clock); when every attempt fails it raises the adapter's `KubeApiError` (the
  status; 0 for a timeout), and an eviction refused with 429 is "blocked", as the adapter maps it.
  (urllib3's own retries of a GET that read nothing, under the adapter's, are not modelled.)
* Kubernetes, `kube_api: http` (`api_fault`): the API emulator answers the request with the
  status (429 with `Retry-After`) or hangs up without an answer, and the real adapter meets it.
* Invocations: a `crash` strikes after an effect (an AWS write, a Kubernetes write, an
  asynchronous invoke) has been carried out; a `timeout` sets the invocation's kill time to a
  random point before its deadline (the context still reports the real deadline). Either way the
  invocation stops (`Stopped`, as Lambda would stop it) and, unlike a plain timeout, nothing it
  tries afterwards (its `finally` blocks) reaches AWS or the cluster: a dead Lambda does nothing.
* SQS (`deliveries`): a message is delivered a second time a little later (same message id, as a
  standard queue's at-least-once delivery does) or held back past later messages.

What is counted per kind (`summary`): faults injected; retries (each SDK or `Backoff` sleep that
followed a fault on that invocation's thread, and the client's LIST retries); the virtual seconds
those retries slept (the SDK's sleeps run on the virtual clock while faults are on); and the
invocations that ended in an error or were stopped after meeting the fault.

Determinism: draws come from `random.Random` streams keyed by (seed, fault index, stream), and
the simulation runs one invocation at a time, so a seed replays the same faults. The exceptions
are faults drawn on the watch threads of `kube_api: http` (real time), which have streams of
their own so they cannot shift the others. botocore's retry jitter uses the process's `random`;
`install` seeds it from the scenario seed.
"""

from __future__ import annotations

import datetime
import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from nodewright.adapters.kube.cluster import RETRIES, KubeApiError, retry_delay
from nodewright.inmemory.apiserver import FAULT_MESSAGES
from nodewright.model.nodeclaim import NodeClaim
from nodewright.simulator.report.metrics import InstanceRecord
from nodewright.simulator.scenario import Fault, Scenario
from nodewright.simulator.standins.lambdas import Invocation, Lambdas, Stopped

# AWS operations that change something: the effects a crash may follow.
_WRITES = ("Create", "Delete", "Put", "Update", "Terminate", "Send", "Run", "Modify", "TransactWrite", "BatchWrite")
_CONDITIONAL = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
_EC2_THROTTLE_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>RequestLimitExceeded</Code>'
    "<Message>Request limit exceeded.</Message></Error></Errors><RequestID>{id}</RequestID></Response>"
)
_DYNAMODB_MESSAGES = {
    "ProvisionedThroughputExceededException": (
        "The level of configured provisioned throughput for the table was exceeded. "
        "Consider increasing your provisioning level with the UpdateTable API."
    ),
    "ThrottlingException": "Rate of requests exceeds the allowed throughput.",
}
_TIMEOUT_MESSAGE = "Read timed out. (read timeout=30.0)"
# A duplicate arrives this long after the first delivery at most; a held-back message this long.
DUPLICATE_WITHIN = 30.0
REORDER_WITHIN = 60.0


@dataclass(slots=True)
class Tally:
    """What one kind of fault did in a run."""

    injected: int = 0
    retries: int = 0
    delay: float = 0.0
    failed_invocations: int = 0

    def as_dict(self) -> dict[str, float | int]:
        """The summary.json form."""
        return {
            "injected": self.injected,
            "retries": self.retries,
            "delay_seconds": round(self.delay, 3),
            "failed_invocations": self.failed_invocations,
        }


class Faults:
    """The scenario's faults for one run (see the module docstring)."""

    def __init__(self, scenario: Scenario, lambdas: Lambdas) -> None:
        self.scenario = scenario
        self.lambdas = lambdas
        self.clock = lambdas.clock
        self.tallies: dict[str, Tally] = {f.kind: Tally() for f in scenario.faults}
        self._streams: dict[tuple[int, str], random.Random] = {}
        self._lock = threading.Lock()
        self._dead: set[Invocation] = set()
        self._doomed: set[Invocation] = set()  # invocations a `timeout` fault will kill
        self._met: dict[Invocation, set[str]] = {}  # fault kinds each live invocation met
        self._last_aws: dict[Invocation, str] = {}  # the AWS fault a retry sleep pays for
        self._last_kube = ""  # the kind of the API emulator's last injected answer
        self._quiet = 0  # > 0 while the simulator's own calls run inside an invocation
        self._restore: Callable[[], None] | None = None
        self.audit: dict[str, Any] = {}

    @property
    def enabled(self) -> bool:
        """True when the scenario has faults."""
        return bool(self.scenario.faults)

    # -- drawing ---------------------------------------------------------------------------------------

    def draw(self, kind: str, stream: str, applies: Callable[[Fault], bool] = lambda f: True) -> Fault | None:
        """The first fault of `kind` in its window that applies and strikes now, counted; or None."""
        t = self.clock.now() - self.scenario.start
        for index, fault in enumerate(self.scenario.faults):
            if fault.kind != kind or not fault.active(t) or not applies(fault):
                continue
            with self._lock:
                rng = self._streams.get((index, stream))
                if rng is None:
                    rng = self._streams[(index, stream)] = random.Random(f"{self.scenario.seed}:{index}:{stream}")
                struck = rng.random() < fault.rate
            if struck:
                self._count(kind)
                return fault
        return None

    def _count(self, kind: str) -> None:
        with self._lock:
            self.tallies[kind].injected += 1
        invocation = self.invocation()
        if invocation is not None:
            self._met.setdefault(invocation, set()).add(kind)

    def _uniform(self, stream: str, low: float, high: float) -> float:
        with self._lock:
            rng = self._streams.get((-1, stream))
            if rng is None:
                rng = self._streams[(-1, stream)] = random.Random(f"{self.scenario.seed}:uniform:{stream}")
            return rng.uniform(low, high)

    def invocation(self) -> Invocation | None:
        """The invocation whose thread is running this code, or None (the world's own calls)."""
        current = self.lambdas.current
        if current is None or current.thread is not threading.current_thread() or self._quiet:
            return None
        return current

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """No fault strikes the calls made inside (the simulator's own calls from an invocation)."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    # -- invocations ---------------------------------------------------------------------------------

    def kill_at(self, function: str, now: float, timeout: float) -> float | None:
        """When a `timeout` fault kills this invocation (a random point before its deadline), or None."""
        if self.draw("timeout", f"timeout:{function}", lambda f: function in f.functions) is None:
            return None
        return now + self._uniform(f"timeout:{function}", 0.0, timeout)

    def doomed(self, invocation: Invocation) -> None:
        """`invocation` was started with a kill time from `kill_at`: once stopped it does nothing more."""
        self._doomed.add(invocation)
        self._met.setdefault(invocation, set()).add("timeout")

    def check_alive(self) -> None:
        """Raise `Stopped` when the calling invocation was killed by a fault: it can do nothing more."""
        invocation = self.invocation()
        if invocation is None:
            return
        if invocation in self._dead:
            raise Stopped("crash")
        if invocation in self._doomed and invocation._stop:
            raise Stopped(invocation._stop)

    def effect(self, what: str) -> None:
        """An effect (`what`) was carried out by the calling invocation: a `crash` may strike now.
        The invocation is then dead: it stops at its next request or effect (`check_alive`), and
        if it makes none, its answer is lost with it (`finished`). Whatever it does in between
        touches nothing outside it, so stopping it there is stopping it here.
        """
        invocation = self.invocation()
        if invocation is None or invocation in self._dead:
            return
        function = invocation.function
        if self.draw("crash", f"crash:{function}", lambda f: function in f.functions) is not None:
            self._dead.add(invocation)

    def finished(self, invocation: Invocation) -> None:
        """The invocation ended: a crashed one that returned anyway has lost its answer (Lambda
        reports no result, an SQS batch is not acknowledged); charge failures to the faults met.
        """
        if invocation in self._dead and not invocation.stopped:
            invocation.stopped, invocation.result, invocation.error = "crash", None, None
        met = self._met.pop(invocation, set())
        self._dead.discard(invocation)
        self._doomed.discard(invocation)
        self._last_aws.pop(invocation, None)
        if invocation.error is None and not invocation.stopped:
            return
        for kind in met:
            self.tallies[kind].failed_invocations += 1

    # -- retries --------------------------------------------------------------------------------------

    def sleep(self, seconds: float) -> None:
        """A retry's sleep (the SDK's or the EC2 adapter's `Backoff`): virtual time, charged to the
        AWS fault the invocation last met. Outside an invocation (the world's own calls, which no
        fault touches) it does not wait: the world must not run its loop from inside a step.
        """
        invocation = self.invocation()
        if invocation is None:
            return
        kind = self._last_aws.get(invocation)
        if kind is not None:
            self._retry(kind, seconds)
        else:
            self.lambdas.sleep(seconds)

    def jitter(self) -> float:
        """The EC2 adapter's backoff jitter, drawn from the seed."""
        return self._uniform("backoff", 0.0, 1.0)

    # -- Kubernetes -----------------------------------------------------------------------------------

    def kube(self, verb: str, call: str) -> None:
        """Before a Kubernetes request of `verb` (list, evict, patch) by an invocation, in-memory:
        what `KubeCluster` does with the faults' answers. Each transient answer is sent again
        (`RETRIES` times, waiting as the adapter waits, on the virtual clock); when they all
        fail, raise the `KubeApiError` the adapter raises for the last one.
        """
        invocation = self.invocation()
        if invocation is None:
            return
        self.check_alive()
        for attempt in range(RETRIES + 1):
            fault = self._kube_fault(verb, f"kube:{verb}")
            if fault is None:
                return
            if attempt == RETRIES:
                raise _kube_error(fault, call)
            wait = fault.retry_after if fault.kind == "kube-429" else 0.0
            self._retry(fault.kind, retry_delay(attempt, wait, self.jitter()))

    def kube_sleep(self, seconds: float) -> None:
        """The adapter's wait before a retry over HTTP (`kube_api: http`): virtual time, charged
        to the fault the API emulator answered last.
        """
        if self.invocation() is None:
            return
        if self._last_kube:
            self._retry(self._last_kube, seconds)
        else:
            self.lambdas.sleep(seconds)

    def _retry(self, kind: str, seconds: float) -> None:
        with self._lock:
            self.tallies[kind].retries += 1
            self.tallies[kind].delay += seconds
        self.lambdas.sleep(seconds)

    def api_fault(self, verb: str, resource: str) -> tuple[int, float | None] | None:
        """How the API emulator answers a request (`verb`, `resource` as it counts them): a status
        (0: hang up without an answer) and for 429 the Retry-After seconds; None to serve it.
        """
        name = _issue_verb(verb, resource)
        if name is None:
            return None
        fault = self._kube_fault(name, f"http:{name}")
        if fault is None:
            return None
        self._last_kube = fault.kind
        if fault.kind == "kube-timeout":
            return 0, None
        if fault.kind == "kube-429":
            return 429, fault.retry_after
        return fault.status, None

    def _kube_fault(self, verb: str, stream: str, kinds: Sequence[str] = ()) -> Fault | None:
        for kind in kinds or ("kube-5xx", "kube-429", "kube-timeout"):
            fault = self.draw(kind, stream, lambda f: verb in f.verbs)
            if fault is not None:
                return fault
        return None

    # -- AWS ------------------------------------------------------------------------------------------

    def install(self, clients: Mapping[str, Any], quiet_ec2: Callable[[], bool] = lambda: False) -> None:
        """Hook the functions' moto clients (`{"ec2": ..., "dynamodb": ..., "sqs": ...}`): faults
        before each request, effects after each write. `quiet_ec2()` is true while the simulated
        EC2 makes calls of its own (the second and later launches of one CreateFleet).
        """
        if self.enabled:
            # botocore's retry jitter draws from the process's `random`: seeded, a run replays.
            random.seed(f"{self.scenario.seed}:sdk")
        if self._restore is None:
            self._restore = self._patch_clocks()
        from moto.core.models import botocore_stubber

        for service, client in clients.items():
            events = client.meta.events
            # botocore runs every before-send handler and takes the first answer: moto's would
            # still carry out a request a fault answers. Moto is asked from our handler instead.
            events.unregister("before-send", botocore_stubber)
            events.register(f"before-send.{service}", self._before_send(service, quiet_ec2, botocore_stubber))
            events.register(f"after-call.{service}", self._after_call(service))

    def _patch_clocks(self) -> Callable[[], None]:
        """Move the clocks the functions' libraries read onto the virtual clock (process-wide
        until `close`, like moto's mock); returns what undoes it.

        * The SDK sleeps between retries with `time.sleep` in botocore.endpoint: it sleeps on the
          virtual clock instead, and is counted (`sleep`).
        * Powertools idempotency stamps and checks its records by the wall clock: an event whose
          invocation died stays "in progress" for the dead invocation's remaining time, and a
          completed one is remembered for an hour, both of which must pass on the virtual clock
          (on the wall clock every record written at the virtual time looks long expired, so a
          duplicate acted again and a retried write met an "inconsistent state").
        """
        from aws_lambda_powertools.utilities.idempotency import base
        from aws_lambda_powertools.utilities.idempotency.persistence import base as persistence
        from aws_lambda_powertools.utilities.idempotency.persistence import datarecord, dynamodb
        from botocore import endpoint

        virtual = _virtual_datetime(self.clock.now)
        undo = [_patch(endpoint, "time", _Module(time, sleep=self.sleep))]
        undo += [_patch(module, "dt", virtual) for module in (base, persistence, datarecord, dynamodb)]

        def restore() -> None:
            for one in reversed(undo):
                one()

        return restore

    def close(self) -> None:
        """Undo what `install` patched."""
        if self._restore is not None:
            self._restore()
            self._restore = None

    def _before_send(self, service: str, quiet_ec2: Callable[[], bool], moto: Callable[..., Any]) -> Callable[..., Any]:
        def handler(request: Any, event_name: str = "", **_: Any) -> Any:
            if self.invocation() is not None:
                answer = self._fault_answer(service, quiet_ec2, request, event_name)
                if answer is not None:
                    return answer
            return moto(event_name=event_name, request=request)

        return handler

    def _fault_answer(self, service: str, quiet_ec2: Callable[[], bool], request: Any, event_name: str) -> Any:
        """The answer a fault gives this request in place of moto's, or None."""
        self.check_alive()
        operation = event_name.rsplit(".", 1)[-1]
        if service == "ec2" and not quiet_ec2():
            fault = self.draw("ec2-throttle", f"ec2:{operation}", lambda f: f.throttles(operation))
            if fault is not None:
                return self._answer(request, fault.kind, 503, {}, _EC2_THROTTLE_BODY.format(id=_request_id()))
        if service == "dynamodb":
            fault = self.draw("dynamodb-throttle", "dynamodb")
            if fault is not None:
                body = {
                    "__type": f"com.amazonaws.dynamodb.v20120810#{fault.code}",
                    "message": _DYNAMODB_MESSAGES[fault.code],
                }
                headers = {"x-amzn-ErrorType": fault.code, "Content-Type": "application/x-amz-json-1.0"}
                return self._answer(request, fault.kind, 400, headers, json.dumps(body))
            conditional = operation in _CONDITIONAL and _conditional(request)
            if conditional and self.draw("dynamodb-conditional", "dynamodb") is not None:
                self._lose_answer(request, event_name)
        return None

    def _answer(self, request: Any, kind: str, status: int, headers: Mapping[str, str], body: str) -> Any:
        from botocore.awsrequest import AWSResponse
        from moto.core.botocore_stubber import MockRawResponse

        invocation = self.invocation()
        if invocation is not None:
            self._last_aws[invocation] = kind
        return AWSResponse(request.url, status, dict(headers), MockRawResponse(body))

    def _lose_answer(self, request: Any, event_name: str) -> None:
        """Let moto carry out the write, then fail as a read timeout: the SDK retries it."""
        from botocore.exceptions import ReadTimeoutError
        from moto.core.models import botocore_stubber

        botocore_stubber(event_name=event_name, request=request)
        invocation = self.invocation()
        if invocation is not None:
            self._last_aws[invocation] = "dynamodb-conditional"
        raise ReadTimeoutError(endpoint_url=request.url)

    def _after_call(self, service: str) -> Callable[..., None]:
        def handler(event_name: str = "", **_: Any) -> None:
            operation = event_name.rsplit(".", 1)[-1]
            if service == "ec2" and operation in ("CreateFleet", "TerminateInstances"):
                return  # counted once the simulated EC2 has answered the whole call (`SimulatedEc2`)
            if operation.startswith(_WRITES) or operation == "ChangeMessageVisibility":
                self.effect(f"{service}:{operation}")

        return handler

    # -- SQS ------------------------------------------------------------------------------------------

    def deliveries(
        self, records: Sequence[Mapping[str, Any]], hold: Callable[[Mapping[str, Any], float], None]
    ) -> tuple[list[Mapping[str, Any]], list[tuple[float, Mapping[str, Any]]]]:
        """The batch the event source mapping hands the function now, and duplicates to deliver
        later (delay, record). A held-back record is passed to `hold(record, seconds)`, which makes
        it visible again that much later.
        """
        now_records: list[Mapping[str, Any]] = []
        later: list[tuple[float, Mapping[str, Any]]] = []
        for record in records:
            if self.draw("sqs-reorder", "sqs-reorder") is not None:
                delay = self._uniform("sqs-reorder", 5.0, REORDER_WITHIN)
                self.tallies["sqs-reorder"].delay += delay
                hold(record, delay)
                continue
            now_records.append(record)
            if self.draw("sqs-duplicate", "sqs-duplicate") is not None:
                later.append((self._uniform("sqs-duplicate", 1.0, DUPLICATE_WITHIN), dict(record)))
        return now_records, later

    # -- the report -----------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The `faults` block of summary.json: per kind what was injected and what it cost, when
        the last fault window closed, and the duplicate/orphan audit.
        """
        return {
            "by_kind": {kind: tally.as_dict() for kind, tally in sorted(self.tallies.items())},
            "injected": sum(t.injected for t in self.tallies.values()),
            "last_fault_window_end_seconds": self.scenario.faults_end,
            "audit": self.audit,
        }


# An orphan is counted when it is still there this long after the last fault.
ORPHAN_GRACE_SECONDS = 900.0


def audit_claims(
    instances: Mapping[str, InstanceRecord], claims: Sequence[NodeClaim], now: float, *, at: float, note: str = ""
) -> dict[str, Any]:
    """Duplicates and orphans at virtual time `now` (`at`: seconds after the start):
    `duplicate_instances`, claims that ever had more than one instance; `orphan_instances`, live
    instances whose claim is not in the state table; `orphan_claims`, claims whose instance is
    gone, or still pending (no instance) after `ORPHAN_GRACE_SECONDS`.
    """
    by_claim: dict[str, list[str]] = {}
    for record in instances.values():
        if record.nodeclaim:
            by_claim.setdefault(record.nodeclaim, []).append(record.instance_id)
    live = {r.instance_id for r in instances.values() if r.terminated_at is None}
    known = {c.name for c in claims}
    orphan_claims = [
        c.name
        for c in claims
        if (c.instance_id and c.instance_id not in live)
        or (not c.instance_id and now - c.created_at > ORPHAN_GRACE_SECONDS)
    ]
    result: dict[str, Any] = {
        "at_seconds": round(at, 3),
        "duplicate_instances": {k: sorted(v) for k, v in sorted(by_claim.items()) if len(v) > 1},
        "orphan_instances": sorted(
            r.instance_id for r in instances.values() if r.terminated_at is None and r.nodeclaim not in known
        ),
        "orphan_claims": sorted(orphan_claims),
    }
    if note:
        result["note"] = note
    return result


def _patch(owner: Any, name: str, value: Any) -> Callable[[], None]:
    """Set `owner.name` to `value`; return what puts it back."""
    original = getattr(owner, name)
    setattr(owner, name, value)
    return lambda: setattr(owner, name, original)


def _virtual_datetime(now: Callable[[], float]) -> Any:
    """The `datetime` module with `datetime.now()` reading `now()` (epoch seconds, local time)."""

    class VirtualDatetime(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> VirtualDatetime:
            moment = datetime.datetime.fromtimestamp(now(), tz)
            return cls.fromtimestamp(moment.timestamp(), tz)

    return _Module(datetime, datetime=VirtualDatetime)


class _Module:
    """A module seen through a few replaced names."""

    def __init__(self, module: Any, **replaced: Any) -> None:
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def _issue_verb(verb: str, resource: str) -> str | None:
    """The scenario's verb for a request the API emulator counts as (`verb`, `resource`)."""
    if verb in ("list", "watch"):
        return verb
    if verb == "create" and resource == "pods/eviction":
        return "evict"
    if verb == "patch":
        return "patch"
    return None


def _kube_error(fault: Fault, call: str) -> KubeApiError:
    if fault.kind == "kube-timeout":
        return KubeApiError(call, 0, _TIMEOUT_MESSAGE)
    status = 429 if fault.kind == "kube-429" else fault.status
    return KubeApiError(call, status, FAULT_MESSAGES.get(status, "Internal error occurred"))


def _conditional(request: Any) -> bool:
    body = request.body
    text = body.decode() if isinstance(body, bytes) else str(body or "")
    return '"ConditionExpression"' in text


def _request_id() -> str:
    return "00000000-0000-0000-0000-000000000000"
