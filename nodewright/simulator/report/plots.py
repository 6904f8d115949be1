"""The report's PNG plots: nodes by capacity type, pending pods, cost, and an overview.

Role: `draw`, called by `nodewright.simulator.report.write_report`; matplotlib (its Agg backend)
is imported here only, inside `draw`, so the simulator runs without a display or matplotlib
until plots are asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodewright.simulator.world import World


PLOTS = ("nodes.png", "pending.png", "cost.png", "overview.png")


COLORS = {"spot": "#2a9d8f", "on-demand": "#e9c46a", "reserved": "#8ab17d", "unknown": "#999999"}


def draw(world: World, directory: Path) -> list[Path]:
    """The PNG plots; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recorder = world.recorder
    samples = recorder.samples
    if not samples:
        return []
    hours = world.scenario.duration > 3 * 3600
    scale, unit = (3600.0, "hours") if hours else (60.0, "minutes")
    xs = [s.t / scale for s in samples]
    kinds = [k for k in ("spot", "on-demand", "reserved", "unknown") if any(s.nodes.get(k) for s in samples)]
    start = world.scenario.start
    warnings = sorted(r.warning_at - start for r in recorder.interruptions.values())
    rebalances = sorted(r.rebalance_at - start for r in recorder.interruptions.values() if r.rebalance_at is not None)
    consolidated = sorted(
        r.terminated_at - start
        for r in recorder.instances.values()
        if r.terminated_at is not None and r.terminated_by == "consolidation"
    )

    def nodes(ax: Any) -> None:
        series = [[s.nodes.get(k, 0) for s in samples] for k in kinds]
        if series:
            ax.stackplot(xs, *series, labels=kinds, colors=[COLORS[k] for k in kinds], alpha=0.9, step="post")
        ax.plot(xs, [s.booting for s in samples], color="#555", linestyle="--", linewidth=1, label="booting")
        ax.set_ylabel("nodes")
        marks(ax)
        ax.legend(loc="upper left", fontsize=8)

    def pending(ax: Any) -> None:
        ax.plot(xs, [s.pending for s in samples], color="#e76f51", linewidth=1.4, label="pending pods")
        ax.set_ylabel("pending pods", color="#e76f51")
        twin = ax.twinx()
        twin.plot(xs, [s.running for s in samples], color="#264653", linewidth=1, label="running pods")
        twin.set_ylabel("running pods", color="#264653")
        marks(ax)

    def cost(ax: Any) -> None:
        ax.step(xs, [s.hourly_cost for s in samples], where="post", color="#264653", linewidth=1.4)
        ax.set_ylabel("$ per hour")
        cumulative, total, last = [], 0.0, 0.0
        for sample in samples:
            total += sample.hourly_cost * (sample.t - last) / 3600
            last = sample.t
            cumulative.append(total)
        twin = ax.twinx()
        twin.plot(xs, cumulative, color="#f4a261", linewidth=1, linestyle=":")
        twin.set_ylabel("cumulative $", color="#f4a261")
        marks(ax)

    def marks(ax: Any) -> None:
        for t in rebalances:
            ax.axvline(t / scale, color="#f4a261", alpha=0.5, linewidth=0.8, linestyle=":")
        for t in warnings:
            ax.axvline(t / scale, color="#d62828", alpha=0.35, linewidth=0.8)
        if consolidated:
            top = ax.get_ylim()[1]
            ax.plot([t / scale for t in consolidated], [top * 0.97] * len(consolidated), "v", color="#2b9348", ms=4)
        ax.grid(alpha=0.25)

    files = []
    for name, painter, title in (
        ("nodes.png", nodes, "Nodes by capacity type"),
        ("pending.png", pending, "Pods"),
        ("cost.png", cost, "Cost"),
    ):
        figure, ax = plt.subplots(figsize=(10, 3.6), dpi=100)
        painter(ax)
        ax.set_title(f"{world.scenario.name}: {title}", fontsize=11)
        ax.set_xlabel(unit)
        figure.tight_layout()
        path = directory / name
        figure.savefig(path)
        plt.close(figure)
        files.append(path)
    figure, axes = plt.subplots(3, 1, figsize=(10, 8.4), dpi=100, sharex=True)
    nodes(axes[0])
    pending(axes[1])
    cost(axes[2])
    axes[0].set_title(f"Nodewright simulation: {world.scenario.name}", fontsize=12)
    axes[2].set_xlabel(unit)
    figure.tight_layout()
    path = directory / "overview.png"
    figure.savefig(path)
    plt.close(figure)
    files.append(path)
    return files
