"""`explain pod`, `explain node` and `status` over a cluster the real provisioner worked on.

Faked: the Kubernetes API (the in-memory cluster), EC2, DynamoDB and time, as in test_provisioning;
the decision records are the provisioner's own (its RecordingObserver), tagged with the function
as the Logs Insights query returns them. Observed: the answers.
"""

from __future__ import annotations

from typing import Any

from nodewright.controllers.explain import Sources, event_rows, explain_node, explain_pod, status
from nodewright.controllers.provisionoptions import pool_capacities
from tests.builders import pod
from tests.controllers.test_mirror import initialized_node
from tests.controllers.test_provisioning import FixedCatalog, World


def sources(world: World) -> Sources:
    return Sources(
        claim_records=world.store,
        command_records=world.store,
        offering_blocks=world.store,
        snapshot=world.cluster.snapshot(),
        pools=pool_capacities(list(world.pools), {}, FixedCatalog()),
        now=world.clock.now(),
        decisions=[{"function": "provisioner", "at": world.clock.now(), **d} for d in world.observer.decisions],
        events=event_rows(world.cluster.events()),
    )


def test_a_pending_pod_a_claim_holds_is_explained_by_its_claim_and_when_its_node_will_be_ready() -> None:
    world = World()
    world.pending(2)
    world.clock.advance(40)  # a pod waiting this long is nominated with an Event (nominate_after)
    world.run()
    (claim,) = world.store.claims()

    answer = explain_pod(sources(world), "default/web-0")

    assert answer["state"] == "pending"
    assert answer["pending_seconds"] >= 0
    assert answer["claim"]["name"] == claim.name
    assert answer["claim"]["instance_type"] == claim.instance_type
    assert answer["node_ready_by"] == round(claim.launched_at + 90.0, 1)
    assert [s["decision"] for s in answer["seen_by"]] == ["launch"]
    assert [e["reason"] for e in answer["events"]] == ["Nominated"]
    assert claim.name in answer["events"][0]["note"]


def test_a_pod_no_nodepool_can_take_gets_the_per_pool_reasons_from_a_read_only_solve() -> None:
    world = World()
    world.cluster.add_pod(pod("huge", cpu="64", memory="1Gi"))
    world.run()
    claims_before = world.store.claims()

    answer = explain_pod(sources(world), "default/huge")

    assert answer["state"] == "pending"
    assert "claim" not in answer
    assert answer["why_not_scheduled"]["schedulable"] is False
    assert "default" in answer["why_not_scheduled"]["reason"]  # the NodePool is named
    assert world.store.claims() == claims_before  # read-only
    assert any(s["decision"] == "unschedulable" for s in answer["seen_by"])


def test_a_node_is_explained_by_the_claim_that_launched_it_and_what_consolidation_thinks() -> None:
    world = World()
    claim, node = initialized_node(world)
    for p in list(world.cluster.pods()):
        world.cluster.bind(p, node.name)

    answer = explain_node(sources(world), node.name)

    assert answer["claim"]["name"] == claim.name
    assert answer["launched_because"]["pods"] == ["default/web-0", "default/web-1"]
    assert answer["launched_because"]["instance_type_options"][0] == claim.instance_type_options[0]
    assert answer["consolidatable"] is True  # the default NodePool consolidates at once
    assert answer["blocked_by"] == ""
    assert answer["next"].startswith(("stays", "the next consolidator pass would take it"))

    guarded = world.cluster.add_pod(pod("batch", cpu="100m", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    world.cluster.bind(guarded, node.name)
    answer = explain_node(sources(world), node.name)
    assert answer["consolidatable"] is False
    assert answer["blocked_by"] == "pod default/batch is annotated karpenter.sh/do-not-disrupt"
    assert answer["next"] == "stays: pod default/batch is annotated karpenter.sh/do-not-disrupt"
    pod_answer = explain_pod(sources(world), "default/web-0")
    assert pod_answer["state"] == "running"
    assert pod_answer["node"] == node.name


def test_a_node_a_command_disrupts_says_what_happens_next() -> None:
    world = World()
    _, node = initialized_node(world, id="cmd-7", method="emptiness", state="draining", detail="delete the empty node")

    answer = explain_node(sources(world), node.name)

    assert answer["next"] == "command cmd-7 (emptiness) is in state draining: delete the empty node"
    assert "cmd-7" in answer["disrupting"]


def test_status_shows_functions_claims_commands_and_the_capacity_error_cache() -> None:
    world = World()
    world.pending(2)
    world.run()
    world.store.block_offerings([("spot", "m5.large", "us-east-1a")], world.clock.now() + 180)

    answer: dict[str, Any] = status(sources(world))

    (claim,) = world.store.claims()
    assert answer["functions"]["provisioner"] == {"at": claim.launched_at, "decision": "launch"}
    assert len(answer["claims_in_flight"]) == 1
    assert answer["capacity_errors"] == ["spot/m5.large/us-east-1a"]
    assert answer["commands"] == []
    assert answer["hourly_cost"] > 0
    assert answer["kube_requests_last_hour"] >= 0
