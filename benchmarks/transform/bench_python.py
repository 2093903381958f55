#!/usr/bin/env python3
"""The transformation primitives through the Python API, one JSON line per measurement.

    PYTHONPATH=<build>/python python3 benchmarks/transform/bench_python.py [--runs N] [--label TEXT] TRACE

Same measurements as daydream_bench_transform where the API allows, best of N (default 5), one
thread, time.perf_counter:
  graph       daydream.load(path): tasks, seconds (read + parse + graph build)
  select      g.select(kind=..., name=...) and friends (+ .scale() where the C++ benchmark scales);
              tasks/s = every task of the graph / seconds. Runs on one scratch copy.
  select_py   g.select(pred=lambda t: "gemm" in t.name): a Python callable called once per task
              (and with kind="kernel": once per kernel)
  copy        g.copy()
  simulate    g.simulate() of the original and of an AMP copy (tasks/s)
Exits with status 3 and a message on stderr when `import daydream` fails.
"""

import argparse
import json
import resource
import statistics
import sys
import time

TENSOR_CORE = "gemm|conv|wgrad"


def timed(fn, runs):
    """Best and median seconds of `runs` calls, and the last call's value."""
    times, value = [], None
    for _ in range(runs):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), times[0], value


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--py-runs", type=int, default=3, help="runs of the Python-callable selections (slow)")
    parser.add_argument("--label", default=None)
    args = parser.parse_args()
    label = args.label or args.trace

    try:
        import daydream
    except ImportError as e:
        print(f"bench_python: cannot import daydream ({e}); set PYTHONPATH to <build>/python", file=sys.stderr)
        return 3

    def emit(bench, **fields):
        print(json.dumps({"bench": bench, "label": label, "api": "python", **fields}), flush=True)

    start = time.perf_counter()
    g = daydream.load(args.trace)
    load_s = time.perf_counter() - start
    tasks = g.num_tasks
    emit("graph", tasks=tasks, live_tasks=len(g), load_s=round(load_s, 3), peak_rss_mib=round(peak_rss_mib(), 1),
         version=daydream.__version__)

    # copy
    best, median, first, clone = timed(g.copy, args.runs)
    del clone
    emit("copy", runs=args.runs, copy_s=round(best, 5), copy_s_median=round(median, 5), copy_s_first=round(first, 5),
         copy_tasks_s=round(tasks / best), peak_rss_mib=round(peak_rss_mib(), 1))

    # select (+ scale), built-in filters
    work = g.copy()
    cases = [
        ("kernel_name", 'select(kind="kernel", name="gemm|conv|wgrad").scale(1/3)',
         lambda: work.select(kind="kernel", name=TENSOR_CORE), 1 / 3),
        ("kernel_name_not", 'select(kind="kernel", name_not="gemm|conv|wgrad").scale(0.5)',
         lambda: work.select(kind="kernel", name_not=TENSOR_CORE), 0.5),
        ("phase_backward", 'select(phase="backward")', lambda: work.select(phase="backward"), None),
        ("kind_kernel", 'select(kind="kernel")', lambda: work.select(kind="kernel"), None),
        ("all", "select()", lambda: work.select(), None),
        ("kernel_name_gemm", 'select(kind="kernel", name="gemm").scale(1/3)',
         lambda: work.select(kind="kernel", name="gemm"), 1 / 3),
    ]
    for case, call, select, factor in cases:
        sel_best, sel_median, _, selected = timed(select, args.runs)
        total_best = sel_best
        scale_best = 0.0
        if factor is not None:
            scale_best, _, _, _ = timed(lambda: selected.scale(factor), args.runs)
            total_best = sel_best + scale_best
        emit("select", case=case, call=call, runs=args.runs, scanned=tasks, selected=len(selected),
             select_s=round(sel_best, 5), select_s_median=round(sel_median, 5), scale_s=round(scale_best, 5),
             total_s=round(total_best, 5), select_tasks_s=round(tasks / sel_best), total_tasks_s=round(tasks / total_best),
             scaled=factor is not None)

    # select with a Python callable: one call per task that passed the other filters
    py_cases = [
        ("py_pred_all", 'select(pred=lambda t: "gemm" in t.name)', lambda: work.select(pred=lambda t: "gemm" in t.name)),
        ("py_pred_kernel", 'select(lambda t: "gemm" in t.name, kind="kernel")',
         lambda: work.select(lambda t: "gemm" in t.name, kind="kernel")),
    ]
    for case, call, select in py_cases:
        best, median, _, selected = timed(select, args.py_runs)
        emit("select_py", case=case, call=call, runs=args.py_runs, scanned=tasks, selected=len(selected),
             select_s=round(best, 4), select_s_median=round(median, 4), select_tasks_s=round(tasks / best))
    del work

    # AMP on a fresh copy, then simulate both
    def amp_transform():
        amp_graph = g.copy()
        start_t = time.perf_counter()
        amp_graph.select(kind="kernel", name=TENSOR_CORE).scale(1 / 3)
        amp_graph.select(kind="kernel", name_not=TENSOR_CORE).scale(0.5)
        return time.perf_counter() - start_t, amp_graph

    amp_times = []
    amp = None
    for _ in range(args.runs):
        seconds, amp = amp_transform()
        amp_times.append(seconds)
    emit("amp", runs=args.runs, amp_s=round(min(amp_times), 5), amp_s_median=round(statistics.median(amp_times), 5),
         amp_tasks_s=round(2 * tasks / min(amp_times)))

    makespans = {}
    for which, graph in (("original", g), ("amp", amp)):
        best, median, first, result = timed(graph.simulate, args.runs)
        makespans[which] = result.total_ms
        emit("simulate", graph=which, runs=args.runs, tasks=len(graph), sim_s=round(best, 4),
             sim_s_median=round(median, 4), sim_s_first=round(first, 4), sim_tasks_s=round(len(graph) / best),
             makespan_ms=round(result.total_ms, 3))
    emit("amp_speedup", original_ms=round(makespans["original"], 3), amp_ms=round(makespans["amp"], 3),
         speedup=round(makespans["original"] / makespans["amp"], 3) if makespans["amp"] else None)
    emit("peak", peak_rss_mib=round(peak_rss_mib(), 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
