"""The deploy key spotToSpotConsolidation, as a scenario sets it: a spot node left holding one small
pod is replaced by a cheaper spot node when it is on (with Karpenter's 15-cheaper-types rule), and
kept when it is off (Karpenter's default: spot nodes are only deleted, never replaced by spot).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import Scenario
from tests.simulator.conftest import NODECLASS, deployment

SPOT_POOL = """
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: spot}
    spec:
      template:
        spec:
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
          requirements:
            - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
            - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 30s}
"""
SHRINK = "    replicas: [{at: 0s, replicas: 1}, {at: 4m, replicas: 0}]\n"


def day(setting: str) -> str:
    return (
        f"name: spot-to-spot\nduration: 20m\nseed: 3\n{setting}nodepools:{SPOT_POOL}nodeclasses:{NODECLASS}"
        f"workloads:{deployment('big', 1, cpu='6', memory='8Gi', schedule=SHRINK)}{deployment('small', 1)}"
    )


@pytest.mark.parametrize(("setting", "replaced"), [("", True), ("spot_to_spot_consolidation: false\n", False)])
def test_a_lone_small_pod_moves_to_a_cheaper_spot_node_only_when_spot_to_spot_is_on(
    scenario: Callable[[str], Scenario], setting: str, replaced: bool
) -> None:
    loaded = scenario(day(setting))
    assert loaded.spot_to_spot_consolidation is replaced
    summary = run_scenario(loaded, None, plots=False).summary
    assert summary["pods_lost"] == 0
    launched, moved = summary["nodes_launched"], summary["consolidation_moves"]["pods_moved"]
    # On: the 8-cpu node that held both pods gives way to a small spot node, moving the small pod.
    assert (launched, moved) == ((2, 1) if replaced else (1, 0)), summary["consolidation_moves"]
