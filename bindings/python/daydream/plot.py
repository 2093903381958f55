"""Plots of daydream predictions (matplotlib, imported only when a plot is drawn).

    from daydream.plot import plot_roofline, plot_sweep, plot_timeline

    plot_sweep(daydream.sweep(graph, ["amp", "faster_gpu:factor=2|4"]))
    p = daydream.predict(graph, "amp")
    plot_timeline(p.baseline_result, p.result, window_ms=(0, 50))
    plot_roofline(daydream.roofline(graph), by="operators")
"""

from __future__ import annotations

from typing import Iterable, Optional

from ._sweep import COLUMNS, COST_COLUMNS

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


# A parameter column's unit suffix (daydream::parameter_column) -> (axis unit, factor from the canonical unit).
AXIS_UNITS = {"_bytes_per_s": ("Gb/s", 8 / 1e9), "_bytes": ("MiB", 1 / 2**20), "_ns": ("us", 1e-3)}


def plot_sweep(df, ax=None, x: Optional[str] = None):
    """A daydream.sweep() frame's speedups, with the baseline (1.0) as a dashed line; the speedup
    axis starts near the data, not at 0. Returns the matplotlib Axes (a new figure's when ax is None).

    Bars (the default): one horizontal bar per scenario, best on top, labelled (1.52x; 3 decimals
    where 2 would show different speedups alike or a change as 1.00x); rows whose scenario could
    not apply stay as rows, named, with "failed: <why>" instead of a bar.
    Lines (grids): when every row comes from a grid over one numeric parameter (or x= names a
    parameter column), speedup against that parameter, one line per scenario and fixed arguments,
    in human units (Gb/s, MiB, us); failed rows are named in the title."""
    plt = _pyplot()
    failed = df["error"].notna() if "error" in df else df["speedup"].isna()
    x = x if x is not None else _grid_parameter(df[~failed])
    if x is not None and x not in df:
        raise ValueError(f"plot_sweep: no column {x!r} (parameter columns: {list(_parameter_columns(df))})")
    if ax is None:
        height = 4.5 if x is not None else 1.5 + 0.4 * max(len(df), 1)
        _, ax = plt.subplots(figsize=(8, height), layout="constrained")
    if x is not None:
        _sweep_lines(ax, df, failed, x)
    else:
        _sweep_bars(ax, df, failed)
    title = "predicted speedup per scenario"
    if "baseline_ms" in df and len(df):
        title += f" (baseline {df['baseline_ms'].iloc[0]:.3f} ms)"
    if failed.any():
        names = df.loc[failed, "scenario"].tolist()
        title += f", {len(names)} failed" + (f": {', '.join(names)}" if x is not None else "")
    ax.set_title(title, wrap=True)
    return ax


def _parameter_columns(df) -> list:
    return [c for c in df.columns if c not in COLUMNS and c not in COST_COLUMNS]


def _grid_parameter(rows) -> Optional[str]:
    """The one numeric parameter column that the rows vary, when every row is on a line of at
    least 2 points over it; None otherwise (bars)."""
    import pandas

    if len(rows) < 2:
        return None
    varying = [c for c in _parameter_columns(rows)
               if pandas.api.types.is_numeric_dtype(rows[c]) and rows[c].notna().all() and rows[c].nunique() > 1]
    if len(varying) != 1:
        return None
    lines = rows.groupby(_line_keys(rows, varying[0]), dropna=False, sort=False)
    return varying[0] if all(len(line) >= 2 for _, line in lines) else None


def _fixed_columns(rows, x: str) -> list:
    """The parameter columns other than x: fixed along a line."""
    return [c for c in _parameter_columns(rows) if c != x]


def _line_keys(rows, x: str) -> list:
    """What tells the lines apart: the scenario's name and every other parameter (as text)."""
    names = rows["scenario"].str.split(":", n=1).str[0].rename("name")
    return [names, *(rows[c].astype(str) for c in _fixed_columns(rows, x))]


def _axis(x: str):
    """The parameter's axis label and the factor from its canonical unit to the axis unit."""
    for suffix, (unit, factor) in AXIS_UNITS.items():
        if x.endswith(suffix):
            return f"{x[: -len(suffix)]} ({unit})", factor
    return x, 1.0


def _speedup_decimals(speedups) -> int:
    """2, or 3 where 2 would print different speedups alike, or a change as 1.00x."""
    rounded = [round(s, 2) for s in speedups]
    alike = len(set(rounded)) < len(set(speedups))
    hidden_change = any(r == 1.0 and s != 1.0 for r, s in zip(rounded, speedups))
    return 3 if alike or hidden_change else 2


def _speedup_limits(speedups, below: float, above: float):
    """From just below the smallest value (or the baseline) to just above the largest: margins as
    shares of the range (0.05 each when all are 1.0)."""
    low, high = min([1.0, *speedups]), max([1.0, *speedups])
    span = (high - low) or 1.0
    return low - span * below, high + span * above


def _sweep_bars(ax, df, failed) -> None:
    done = df[~failed].sort_values("speedup", kind="stable")  # ascending: barh draws the first at the bottom
    broken = df[failed]
    labels = broken["scenario"].tolist() + done["scenario"].tolist()  # failed rows at the bottom
    speedups = done["speedup"].tolist()
    low, high = _speedup_limits(speedups, below=0.1, above=0.25)  # room for the labels
    positions = list(range(len(broken), len(labels)))
    bars = ax.barh(positions, [s - low for s in speedups], left=low,
                   color=[FASTER_COLOR if s >= 1 else SLOWER_COLOR for s in speedups])
    decimals = _speedup_decimals(speedups)
    ax.bar_label(bars, labels=[f"{s:.{decimals}f}x" for s in speedups], padding=3)
    for row, error in enumerate(broken["error"].tolist()):
        reason = str(error) if len(str(error)) <= 60 else str(error)[:57] + "..."
        ax.text(low, row, f" failed: {reason}", va="center", color="gray", fontsize="small")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="baseline")
    ax.set_xlim(low, high)
    ax.set_xlabel("speedup (baseline / predicted median iteration)")


def _sweep_lines(ax, df, failed, x: str) -> None:
    rows = df[~failed]
    label, factor = _axis(x)
    speedups = rows["speedup"].tolist()
    decimals = _speedup_decimals(speedups)
    for key, line in rows.groupby(_line_keys(rows, x), dropna=False, sort=False):
        line = line.sort_values(x, kind="stable")
        fixed = [f"{c}={v}" for c, v in zip(_fixed_columns(rows, x), key[1:])
                 if str(v) not in ("nan", "None", "<NA>")]
        xs = (line[x] * factor).tolist()
        ax.plot(xs, line["speedup"].tolist(), marker="o", label=" ".join([key[0], *fixed]))
        for px, py in zip(xs, line["speedup"].tolist()):
            ax.annotate(f"{py:.{decimals}f}x", (px, py), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize="small")
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="baseline")
    ax.set_ylim(*_speedup_limits(speedups, below=0.1, above=0.15))
    ax.set_xlabel(label)
    ax.set_ylabel("speedup (baseline / predicted median iteration)")
    ax.legend()


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


# One color per compute roof (engine and precision), the same in every roofline.
ROOF_COLORS = {
    ("simt", "fp32"): "tab:blue",
    ("simt", "fp16"): "tab:cyan",
    ("tensor", "tf32"): "tab:orange",
    ("tensor", "fp16"): "tab:red",
    ("tensor", "bf16"): "tab:purple",
    ("tensor", "fp8"): "tab:brown",
}
BOUND_MARKERS = {"compute": "o", "memory": "s"}


def plot_roofline(report, by: str = "classes", ax=None, label_top: int = 8):
    """A log-log roofline of a daydream.roofline() report (or of a Graph, whose report it makes):
    the memory slope (bandwidth x intensity) and one flat roof per compute peak of the device
    (SIMT fp32/fp16, tensor tf32/fp16/bf16/fp8 where it has them), each meeting the slope at its
    ridge point; one point per row of `by` ("classes", "operators" or "layers") with known work,
    at (FLOP/byte, achieved TFLOP/s), its area proportional to its time, its color that of the
    roof of its engine and precision, circles for compute-bound rows and squares for memory-bound
    ones. The `label_top` longest rows are labelled. Rows without known work (classed by name) or
    without FLOPs (copies, fills) have no place on log axes and are counted in the title.
    Returns the matplotlib Axes (a new figure's when ax is None)."""
    plt = _pyplot()
    if not hasattr(report, "classes"):
        from ._roofline import roofline
        report = roofline(report)
    if by not in ("classes", "operators", "layers"):
        raise ValueError(f"plot_roofline: by must be 'classes', 'operators' or 'layers', not {by!r}")
    frame = getattr(report, by)
    placed = frame[(frame["flops"] > 0) & (frame["intensity"] > 0) & (frame["achieved_tflops"] > 0)]
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 6), layout="constrained")
    device = report.device
    bandwidth_tbps = device["memory_bandwidth_gbps"] / 1e3  # TFLOP/s per FLOP/byte
    roofs = [p for p in device["peaks"] if p["tflops"] > 0]
    xs = list(placed["intensity"]) + [p["ridge"] for p in roofs]
    x_low = min([0.01, *[x / 4 for x in xs]])
    x_high = max([1000.0, *[x * 4 for x in xs]])
    slope_end = max([p["ridge"] for p in roofs], default=x_high)  # the slope meets the highest roof
    ax.plot([x_low, slope_end], [bandwidth_tbps * x_low, bandwidth_tbps * slope_end], color="black", linewidth=1,
            label=f"memory {device['memory_bandwidth_gbps']:.0f} GB/s")
    for p in roofs:
        color = ROOF_COLORS.get((p["engine"], p["precision"]), "gray")
        ax.plot([p["ridge"], x_high], [p["tflops"], p["tflops"]], color=color, linewidth=1.5,
                label=f"{p['engine']} {p['precision']} {p['tflops']:.1f} TFLOP/s (ridge {p['ridge']:.1f})")
    total = float(placed["time_ms"].sum()) or 1.0
    for bound, rows in placed.groupby("bound", sort=True):
        colors = [ROOF_COLORS.get(("simt" if e == "none" else e, pr), "gray")
                  for e, pr in zip(rows["engine"], rows["precision"])]
        ax.scatter(rows["intensity"], rows["achieved_tflops"], s=20 + 2000 * rows["time_ms"] / total,
                   c=colors, marker=BOUND_MARKERS.get(bound, "o"), alpha=0.6, edgecolors="black", linewidths=0.5,
                   label=f"{bound}-bound {by}")
    for _, row in placed.nlargest(label_top, "time_ms").iterrows():
        ax.annotate(row["name"] if by != "classes" else f"{row['name']} ({row['bound']})",
                    (row["intensity"], row["achieved_tflops"]), fontsize="x-small", xytext=(4, 4),
                    textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_low, x_high)
    y_values = list(placed["achieved_tflops"]) + [p["tflops"] for p in roofs] + [bandwidth_tbps * x_low]
    ax.set_ylim(min(y_values) / 2, max(y_values) * 2)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("achieved TFLOP/s")
    left_out = len(frame) - len(placed)
    title = f"roofline of {device['name']}: {by}, area = time"
    if left_out:
        title += f" ({left_out} without known work or FLOPs not shown)"
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize="x-small")
    return ax


__all__ = ["BOUND_MARKERS", "KIND_COLORS", "ROOF_COLORS", "plot_roofline", "plot_sweep", "plot_timeline"]
