#!/usr/bin/env python3
"""Causality survey over every shared trace and pair (docs/validation.md, "Causality").

For each trace: the replay error of its iterations, u (the share of the GPU span in which some
GPU stream is busy), the busiest CPU thread's share of the simulated run, the prediction of
`faster_gpu:factor=2` (ratio of summed iteration times) against Amdahl's bound 1 / (1 - u/2),
how much of the iterations the graph keeps as unexplained delay (the import report's
`unexplained_waits` / `unexplained_gaps`, as a share of the summed measured iteration time), and
the GPU occupancy model: tasks the trace shows held back by another stream's GPU-filling kernel
(`gpu_holds_by_occupancy`, with the time held) / tasks the replay holds (and for how long), or the
holds kept as recorded delays where the trace has no launch configurations (`gpu_holds_kept`).

    PYTHONPATH=build/python python3 benchmarks/validation/causality.py [../shared] [--json]
"""
import argparse
import json
import pathlib
import statistics
import sys

import daydream

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # shared_traces.py, also when imported by a test
from shared_traces import trace_files  # noqa: E402


def survey_files(shared: pathlib.Path) -> list[pathlib.Path]:
    """Single-trace inputs under traces/ and pairs/ (a job's rank files count once: its first rank)."""
    return trace_files(shared, one_rank_per_job=True)


def busy_union_ns(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


GPU_KINDS = ["kernel", "memcpy", "memset", "communication"]


def gpu_busy_share(graph: daydream.Graph, kinds: list[str] = GPU_KINDS) -> float:
    """Share of the GPU span (first to last GPU task of any kind) in which a task of `kinds` runs."""
    frame = graph.tasks_frame()
    gpu = frame[frame["kind"].isin(GPU_KINDS)]
    if gpu.empty:
        return 0.0
    starts = gpu["recorded_start_ns"].to_numpy()
    ends = starts + gpu["duration_ns"].to_numpy()
    span = int(ends.max() - starts.min())
    chosen = gpu["kind"].isin(kinds).to_numpy()
    return busy_union_ns(list(zip(starts[chosen].tolist(), ends[chosen].tolist()))) / span if span > 0 else 0.0


def covered_iterations(graph: daydream.Graph) -> set:
    """Names of the iterations with GPU tasks whose CPU work (half of it) precedes the end of the trace's
    GPU records: some captures lose
    the GPU activity of their last stretch (`launches_without_gpu_record`), and a faster GPU
    cannot speed up GPU work the trace does not hold."""
    frame = graph.tasks_frame()
    gpu = frame[frame["kind"].isin(["kernel", "memcpy", "memset", "communication"])]
    if gpu.empty:
        return set()
    gpu_end = int((gpu["recorded_start_ns"] + gpu["duration_ns"]).max())
    with_gpu = set(gpu.loc[gpu["iteration"] >= 0, "iteration"])
    cpu = frame[frame["kind"].isin(["cpu", "runtime"]) & (frame["iteration"] >= 0)]
    launched = cpu.groupby("iteration")["recorded_start_ns"].median()  # half of its CPU work
    names = graph.iterations
    return {names[i] for i, start in launched.items() if start < gpu_end and i in with_gpu}


def latest_step_end_ms(iterations: list[dict]) -> float:
    """How much later than in the baseline the latest-ending step of a prediction ends (ms; 0 when
    none ends later): the largest excess of predicted over baseline time summed from the first
    step. One step may be longer (a data-bound loop waits longer for a batch whose producer keeps
    its pace) while none ends later."""
    baseline = predicted = lateness = 0.0
    for it in iterations:
        baseline += it["baseline_ms"]
        predicted += it["predicted_ms"]
        lateness = max(lateness, predicted - baseline)
    return lateness


def survey(path: pathlib.Path) -> dict:
    graph = daydream.load(str(path))
    replay = graph.replay()
    row = {"trace": str(path), "iterations": len(replay["iterations"])}
    errors = [abs(it["error"]) for it in replay["iterations"]]
    row["max_error"] = max(errors) if errors else None
    row["median_error"] = statistics.median(errors) if errors else None
    row["u"] = gpu_busy_share(graph)
    row["u_kernels"] = gpu_busy_share(graph, ["kernel"])  # what faster_gpu (kind=kernel) scales
    cpu = [u["utilization"] for u in replay["units"] if u["kind"] == "cpu_thread"]
    row["busiest_thread"] = max(cpu) if cpu else 0.0
    row["amdahl"] = 1.0 / (1.0 - row["u"] / 2.0)
    row["amdahl_kernels"] = 1.0 / (1.0 - row["u_kernels"] / 2.0)
    stats = {s["key"]: s for s in graph.import_report()}
    row["occupancy"] = occupancy_counts(stats, replay["occupancy"])
    if replay["iterations"]:
        prediction = daydream.predict(graph, "faster_gpu:factor=2").to_dict()
        covered = covered_iterations(graph)
        row["iterations_with_gpu_records"] = len(covered)
        rows = [it for it in prediction["iterations"] if it["name"] in covered]
        base = sum(it["baseline_ms"] for it in rows)
        new = sum(it["predicted_ms"] for it in rows)
        row["faster_gpu_2x"] = base / new if new > 0 else None
        row["step_end_lateness_ms"] = latest_step_end_ms(prediction["iterations"])
        measured = sum(it["measured_ms"] for it in replay["iterations"])
        kept = sum(stats.get(k, {}).get("total_ms", 0.0) for k in ("unexplained_waits", "unexplained_gaps"))
        row["unexplained_share"] = min(1.0, kept / measured) if measured > 0 else None
    return row


def occupancy_counts(stats: dict, simulated: dict) -> dict:
    """The occupancy model's holds: recorded (import report) and simulated (replay)."""
    def stat(key):
        return stats.get(key, {}).get("count", 0), stats.get(key, {}).get("total_ms", 0.0)
    (recorded, recorded_ms), (kept, kept_ms) = stat("gpu_holds_by_occupancy"), stat("gpu_holds_kept")
    return {"recorded": recorded, "recorded_ms": recorded_ms, "kept": kept, "kept_ms": kept_ms,
            "simulated": simulated["held_tasks"], "simulated_ms": simulated["held_ms"]}


def occupancy_cell(o: dict) -> str:
    cells = []
    if o["recorded"]:
        cells.append(f"{o['recorded']} ({o['recorded_ms']:.1f} ms) / {o['simulated']} ({o['simulated_ms']:.1f} ms)")
    if o["kept"]:
        cells.append(f"kept {o['kept']} ({o['kept_ms']:.1f} ms)")
    return ", ".join(cells) or "-"


def markdown(rows: list[dict], shared: pathlib.Path) -> str:
    lines = ["| trace | iterations (with GPU records) | replay max / median error | u | busiest thread | faster_gpu 2x | "
             "Amdahl bound | u (kernels) | Amdahl (kernels) | unexplained delay | occupancy holds: recorded / replayed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {pathlib.Path(r['trace']).relative_to(shared)} | failed: {r['failed']} ||||||||||")
            continue
        err = "-" if r["max_error"] is None else f"{100 * r['max_error']:.2f}% / {100 * r['median_error']:.2f}%"
        speed = f"{r['faster_gpu_2x']:.3f}x" if r.get("faster_gpu_2x") else "-"
        unexplained = f"{100 * r['unexplained_share']:.1f}%" if r.get("unexplained_share") is not None else "-"
        its = r["iterations"] if r.get("iterations_with_gpu_records", r["iterations"]) == r["iterations"] \
            else f"{r['iterations']} ({r['iterations_with_gpu_records']})"
        lines.append(f"| {pathlib.Path(r['trace']).relative_to(shared)} | {its} | {err} | "
                     f"{r['u']:.3f} | {100 * r['busiest_thread']:.1f}% | {speed} | {r['amdahl']:.3f}x | "
                     f"{r['u_kernels']:.3f} | {r['amdahl_kernels']:.3f}x | {unexplained} | {occupancy_cell(r['occupancy'])} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shared", nargs="?", default=str(pathlib.Path(__file__).resolve().parents[3] / "shared"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    shared = pathlib.Path(args.shared).resolve()
    rows = []
    for path in survey_files(shared):
        try:
            rows.append(survey(path))
        except Exception as e:  # one bad trace must not hide the others
            rows.append({"trace": str(path), "failed": str(e)})
    print(json.dumps(rows, indent=1) if args.json else markdown(rows, shared))
    return 0


if __name__ == "__main__":
    sys.exit(main())
