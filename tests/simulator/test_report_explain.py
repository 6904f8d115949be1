"""The simulation report explains the pods worth a look: the spot-storm scenario's evicted pods.

Real: the scenario run through the handlers against moto and the in-memory cluster (the session's
`shipped_run`), the report written from it. Observed: report.md's explanation section and its links.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from nodewright.simulator.runner import RunResult


def test_the_spot_storm_report_links_each_evicted_pod_to_why_it_moved(
    tmp_path: Path, shipped_run: Callable[..., RunResult]
) -> None:
    run = shipped_run("spot-storm", tmp_path)
    text = (tmp_path / "report.md").read_text(encoding="utf-8")

    section = text[text.index("## Why: explanations") :]
    links = [line for line in section.splitlines() if line.startswith("- [") and "evicted at" in line]
    assert len(links) == 3
    for line in links:
        anchor = line[line.index("(#") + 2 : -1]
        assert f'<a id="{anchor}"></a>' in section
    first = section[section.index("### ") :].split("```")[1]
    assert "state: gone" in first
    assert "moved by: interruption interruption RebalanceRecommendation" in first
    assert "Event Evicted" in first
    assert "Successfully assigned" in first  # the node it ran on, from its Scheduled Event
    state = text[text.index("## Status at the end (nodewright status)") : text.index("## Why: explanations")]
    claims = len(run.world.store.claims()) if run.world.store is not None else -1
    assert f"| NodeClaim objects (kubectl get nodeclaims) | {claims}, " in state
    # Each function's last decision with its time (the simulator stamps records as CloudWatch does).
    assert re.search(r"\| provisioner: last decision \| [a-z-]+ at \d+m?\d*s? \|", state), state
    assert " at - |" not in state
    assert "| disruption commands running | none |" in state
    nodes = text[text.index("## Why: nodes") :]
    running = {n.name for n in run.world.cluster.snapshot_unrecorded().nodes}
    explained = [line[4:] for line in nodes.splitlines() if line.startswith("### ")]
    assert explained
    assert set(explained) <= running
    answer = nodes[nodes.index("### ") :].split("```")[1]
    assert "launched at " in answer
    assert " pods: pending pods need capacity" in answer
    assert "next: stays: NodePool spot consolidates only empty nodes" in answer
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<h3 id="explain-' in html
    assert 'href="#explain-' in html
