#!/usr/bin/env python3
"""Validates the recordings of benchmarks/gpu/record.py: every pair of pairs.json on each recorded
GPU (predicted from its before trace with its scenario, `daydream validate`), and every run
recorded on two GPUs predicted from one to the other (`gpu:target=<the other GPU>`). Prints
Markdown tables in the form of docs/validation.md's.

Usage: validate_recorded.py [--recorded DIR] [--daydream build/bin/daydream] [--quick] [--jobs N] [--json]

DIR (default benchmarks/gpu/recorded) holds one folder per GPU, as record.py writes them, each with
its manifest.json. Folders of --quick recordings (named *-quick) are left out unless --quick is
given: their traces check the recorder, not the model.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import pathlib
import sys
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "benchmarks" / "validation"))
import validate_pairs  # noqa: E402  (validate, table_row: one form for every validation table)

PAIRS = HERE / "pairs.json"
HEADER = ("| pair | scenario | before measured ms (median / mean) | after measured ms (median / mean) "
          "| predicted ms (median / mean) | error (median / mean) | no-change error (mean) | BEFORE replay error (mean) "
          "| iterations compared | bound (\\|error of mean\\|) | status |\n|---|---|---|---|---|---|---|---|---|---|---|")


def recorded_gpus(root: pathlib.Path, quick: bool) -> list[tuple[pathlib.Path, dict[str, Any]]]:
    """(folder, manifest) of each recorded GPU, by folder name."""
    found = []
    for folder in sorted(p for p in root.iterdir() if (p / "manifest.json").is_file()) if root.is_dir() else []:
        manifest = json.loads((folder / "manifest.json").read_text())
        if manifest["device"].get("quick") and not quick:
            continue
        found.append((folder, manifest))
    return found


def recorded_runs(manifest: dict[str, Any]) -> dict[str, str]:
    """'workload/variant' -> its trace (relative to the GPU's folder), for the runs that worked."""
    return {f'{r["workload"]}/{r["variant"]}': r["trace"] for r in manifest["runs"] if "trace" in r}


def local_pairs(folder: pathlib.Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """pairs.json's pairs whose two traces this GPU recorded, named with the GPU."""
    traces = set(recorded_runs(manifest).values())
    pairs = json.loads(PAIRS.read_text())["pairs"]
    return [{**p, "pair": f'{folder.name}: {p["pair"]}'} for p in pairs if p["before"] in traces and p["after"] in traces]


def cross_gpu_pairs(gpus: list[tuple[pathlib.Path, dict[str, Any]]], root: pathlib.Path) -> list[dict[str, Any]]:
    """Each run recorded on two GPUs, predicted both ways (paths relative to `root`)."""
    pairs = []
    for (a, ma), (b, mb) in itertools.permutations(gpus, 2):
        runs_a, runs_b = recorded_runs(ma), recorded_runs(mb)
        for run in sorted(runs_a.keys() & runs_b.keys()):
            pairs.append({"pair": f"{run}: {a.name} -> {b.name}",
                          "before": str((a / runs_a[run]).relative_to(root)),
                          "after": str((b / runs_b[run]).relative_to(root)),
                          "scenario": f'gpu:target={mb["device"]["name"]}'})
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recorded", type=pathlib.Path, default=HERE / "recorded")
    parser.add_argument("--daydream", default=str(REPO / "build" / "bin" / "daydream"))
    parser.add_argument("--quick", action="store_true", help="include --quick recordings")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = args.recorded.resolve()
    gpus = recorded_gpus(root, args.quick)
    if not gpus:
        print(f"no recordings under {root}: run benchmarks/gpu/record.py on a GPU first (benchmarks/gpu/README.md)")
        return 0
    sections = [(f"Pairs on {folder.name}", [{**p, "before": f"{folder.name}/{p['before']}",
                                             "after": f"{folder.name}/{p['after']}"} for p in local_pairs(folder, m)])
                for folder, m in gpus]
    sections.append(("Across GPUs", cross_gpu_pairs(gpus, root)))
    report = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for title, pairs in sections:
            outcomes = list(pool.map(lambda p: validate_pairs.run_pair(args.daydream, root, p), pairs))
            report.append((title, pairs, outcomes))
    if args.json:
        print(json.dumps({title: [{**p, **o} for p, o in zip(pairs, outcomes)] for title, pairs, outcomes in report},
                         indent=1))
        return 0
    for title, pairs, outcomes in report:
        print(f"\n### {title}\n")
        if not pairs:
            print("none (a run must be recorded on two GPUs)" if title == "Across GPUs" else "none")
            continue
        print(HEADER)
        for pair, outcome in zip(pairs, outcomes):
            print(validate_pairs.table_row(pair, outcome, root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
