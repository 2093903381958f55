"""Plots of daydream predictions (matplotlib, imported only when a plot is drawn).

    from daydream.plot import plot_sweep, plot_timeline

    plot_sweep(daydream.sweep(graph, ["amp", "faster_gpu:factor=2|4"]))
    p = daydream.predict(graph, "amp")
    plot_timeline(p.baseline_result, p.result, window_ms=(0, 50))
"""

from __future__ import annotations

from typing import Iterable, Optional

# One color per task kind (daydream.TASK_KINDS), the same in every panel.
KIND_COLORS = {
    "cpu": "tab:blue",
    "runtime": "tab:orange",
    "kernel": "tab:green",
    "memcpy": "tab:red",
    "memset": "tab:purple",
    "communication": "tab:brown",
}
FASTER_COLOR, SLOWER_COLOR = "tab:green", "tab:red"
ROW_HEIGHT = 0.8  # of a unit's row, in row units


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError("daydream.plot needs matplotlib, which is not installed: "
                          "python3 -m pip install matplotlib") from error
    return plt


def plot_sweep(df, ax=None):
    """Horizontal bars of each scenario's speedup in a daydream.sweep() frame, best on top, each
    labelled (1.52x), with the baseline (1.0) as a dashed line. Rows with an error are left out
    (counted in the title). Returns the matplotlib Axes (a new figure's when ax is None)."""
    plt = _pyplot()
    failed = df["error"].notna() if "error" in df else df["speedup"].isna()
    rows = df[~failed].sort_values("speedup", kind="stable")  # ascending: barh draws the first at the bottom
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 1.5 + 0.4 * max(len(rows), 1)), layout="constrained")
    positions = list(range(len(rows)))
    speedups = rows["speedup"].tolist()
    bars = ax.barh(positions, speedups, color=[FASTER_COLOR if s >= 1 else SLOWER_COLOR for s in speedups])
    ax.set_yticks(positions)
    ax.set_yticklabels(rows["scenario"].tolist())
    ax.bar_label(bars, labels=[f"{s:.2f}x" for s in speedups], padding=3)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="baseline")
    ax.set_xlim(0, max([1.0, *speedups]) * 1.2)  # room for the labels
    ax.set_xlabel("speedup (baseline / predicted median iteration)")
    title = "predicted speedup per scenario"
    if "baseline_ms" in df and len(df):
        title += f" (baseline {df['baseline_ms'].iloc[0]:.3f} ms)"
    if failed.any():
        title += f", {int(failed.sum())} failed"
    ax.set_title(title)
    return ax


def plot_timeline(baseline_result, predicted_result, ax=None, units: Optional[Iterable[str]] = None,
                  window_ms: Optional[tuple[float, float]] = None):
    """Baseline and predicted runs as timelines: one row per unit (CPU thread, GPU stream,
    channel), one bar per task colored by kind. Takes two daydream.Result (e.g. a Prediction's
    baseline_result and result). ax=None draws two panels sharing the time axis; with an Axes, the
    predicted rows go below the baseline rows. units: names to show (default: every unit with a
    task in the window); window_ms: (from, to) in ms from the trace start. Returns the Figure."""
    plt = _pyplot()
    results = {"baseline": baseline_result, "predicted": predicted_result}
    frames = {name: _tasks(result, window_ms) for name, result in results.items()}
    rows = _unit_rows(list(results.values()), list(frames.values()), units)
    titles = {name: f"{name}: {result.total_ms:.3f} ms total" for name, result in results.items()}
    if ax is None:  # two panels, one run each
        figure, axes = plt.subplots(2, 1, sharex=True, figsize=(12, 2 + 0.6 * len(rows)), layout="constrained")
        for panel, name in zip(axes, results):
            _draw(panel, frames[name], rows, offset=0)
            _set_rows(panel, list(rows))
            panel.set_title(titles[name], loc="left")
    else:  # one Axes: the predicted rows below the baseline rows, after a blank row
        figure, axes = ax.figure, [ax]
        _draw(ax, frames["baseline"], rows, offset=0)
        _draw(ax, frames["predicted"], rows, offset=len(rows) + 1)
        _set_rows(ax, [f"baseline | {u}" for u in rows] + [""] + [f"predicted | {u}" for u in rows])
        ax.axhline(len(rows), color="gray", linewidth=0.5)
        ax.set_title(" / ".join(titles.values()), loc="left")
    for panel in axes:
        if window_ms is not None:
            panel.set_xlim(*window_ms)
    axes[-1].set_xlabel("time (ms from the trace start)")
    _legend(axes[0], frames.values())
    return figure


def _tasks(result, window_ms):
    """unit, kind, start_ms, width_ms of the result's tasks that overlap the window."""
    frame = result.to_pandas()[["unit", "kind", "start_ns", "end_ns"]]
    if window_ms is not None:
        begin_ns, end_ns = window_ms[0] * 1e6, window_ms[1] * 1e6
        frame = frame[(frame["end_ns"] >= begin_ns) & (frame["start_ns"] <= end_ns)]
    return frame.assign(start_ms=frame["start_ns"] / 1e6, width_ms=(frame["end_ns"] - frame["start_ns"]) / 1e6)


def _unit_rows(results, frames, units) -> dict[str, int]:
    """{unit: row} in the graph's unit order: the units asked for, or those with a task shown."""
    known = list(dict.fromkeys(name for result in results for name in result.graph.units))
    if units is not None:
        wanted = list(units)
        unknown = [u for u in wanted if u not in known]
        if unknown:
            raise ValueError(f"plot_timeline: no unit named {unknown} (units: {known})")
    else:
        busy = set().union(*(set(frame["unit"]) for frame in frames))
        wanted = [u for u in known if u in busy]
    return {unit: row for row, unit in enumerate(wanted)}


def _draw(ax, frame, rows: dict[str, int], offset: int) -> None:
    frame = frame[frame["unit"].isin(rows)]
    for (unit, kind), tasks in frame.groupby(["unit", "kind"], sort=False):
        bars = list(zip(tasks["start_ms"], tasks["width_ms"]))
        y = offset + rows[unit] - ROW_HEIGHT / 2
        ax.broken_barh(bars, (y, ROW_HEIGHT), facecolors=KIND_COLORS.get(kind, "gray"), linewidth=0)


def _set_rows(ax, labels: list[str]) -> None:
    """One tick per row, the first row on top."""
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)


def _legend(ax, frames) -> None:
    from matplotlib.patches import Patch

    kinds = [k for k in KIND_COLORS if any((frame["kind"] == k).any() for frame in frames)]
    ax.legend(handles=[Patch(color=KIND_COLORS[k], label=k) for k in kinds], loc="upper left",
              bbox_to_anchor=(1.01, 1), fontsize="small", title="task kind")  # outside: never over a bar


__all__ = ["KIND_COLORS", "plot_sweep", "plot_timeline"]
