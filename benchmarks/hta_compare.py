#!/usr/bin/env python3
"""daydream replay against Holistic Trace Analysis on the same Kineto trace (issue 19, item 7).

HTA (pip install holistictraceanalysis) is timed loading the trace (TraceAnalysis) plus one
step's critical path (critical_path_analysis, the first ProfilerStep); daydream is timed as the
whole `daydream replay TRACE --json` process (read, inflate, parse, build, simulate, report).
Each side runs RUNS times in fresh processes (no warm caches inside a process); the best and the
median are printed as one JSON line.

    python3 benchmarks/hta_compare.py TRACE [--daydream build/bin/daydream] [--runs 5]

HTA must be importable by the Python that runs this script (a venv with it installed will do).
HTA 0.5.0 fails with pandas 3 ("Cannot specify both 'axis' and 'index'/'columns'") and needs
psutil: `python3 -m venv hta && hta/bin/pip install holistictraceanalysis==0.5.0 "pandas<3" psutil`,
then run this script with hta/bin/python.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HTA_CHILD = r"""
import sys, time, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
start = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
loaded = time.perf_counter()
graph, ok = analyzer.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=None)
done = time.perf_counter()
print(loaded - start, done - loaded, int(bool(ok)))
"""


def time_hta(trace_dir):
    out = subprocess.run([sys.executable, "-c", HTA_CHILD, trace_dir], check=True, capture_output=True, text=True)
    load_s, path_s, ok = out.stdout.split()[-3:]
    return float(load_s), float(path_s), ok == "1"


def time_daydream(binary, trace):
    start = time.perf_counter()
    subprocess.run([binary, "replay", trace, "--json"], check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--daydream", default="build/bin/daydream")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    try:
        import hta  # noqa: F401  (checked here so a missing install gets a clear message)
    except ImportError:
        sys.exit("hta_compare: Holistic Trace Analysis is not importable (pip install holistictraceanalysis)")
    with tempfile.TemporaryDirectory() as trace_dir:  # HTA reads every trace of a directory, as rank files
        shutil.copy(args.trace, os.path.join(trace_dir, os.path.basename(args.trace)))
        hta_runs = [time_hta(trace_dir) for _ in range(args.runs)]
    ours = [time_daydream(args.daydream, args.trace) for _ in range(args.runs)]
    hta_total = [load + path for load, path, _ in hta_runs]
    best_hta, best_ours = min(hta_total), min(ours)
    print(json.dumps({
        "bench": "hta_compare", "trace": args.trace, "runs": args.runs,
        "hta_load_s": round(min(r[0] for r in hta_runs), 4), "hta_critical_path_s": round(min(r[1] for r in hta_runs), 4),
        "hta_critical_path_ok": all(r[2] for r in hta_runs),
        "hta_best_s": round(best_hta, 4), "hta_median_s": round(statistics.median(hta_total), 4),
        "daydream_replay_best_s": round(best_ours, 4), "daydream_replay_median_s": round(statistics.median(ours), 4),
        "ratio_best": round(best_hta / best_ours, 2),
        "ratio_median": round(statistics.median(hta_total) / statistics.median(ours), 2),
    }))


if __name__ == "__main__":
    main()
