#!/usr/bin/env python3
"""Replay fidelity on every Kineto trace under a folder: measured vs simulated per ProfilerStep
and the GPU span, as a Markdown table (used for docs/replay-fidelity.md).

Usage: replay_fidelity.py [TRACES_DIR=../shared/traces] [--daydream build/bin/daydream]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys


def kineto_traces(root):
    for path in sorted(root.rglob("*.json.gz")):
        if "/et/" in str(path) or path.name.endswith("_et.json.gz"):
            continue
        yield path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("traces", nargs="?", default="../shared/traces")
    parser.add_argument("--daydream", default="build/bin/daydream")
    args = parser.parse_args()
    root = pathlib.Path(args.traces)
    if not root.is_dir():
        print(f"{root} is absent: nothing to measure", file=sys.stderr)
        return 0
    print("| trace | steps | measured ms (per step) | simulated ms | max abs error | median abs error | GPU span error |")
    print("|---|---|---|---|---|---|---|")
    for path in kineto_traces(root):
        out = subprocess.run([args.daydream, "replay", "--json", str(path)], check=True, capture_output=True, text=True)
        report = json.loads(out.stdout)
        steps = report["iterations"]
        errors = [abs(s["error"]) for s in steps]
        name = str(path.relative_to(root))
        measured = " ".join(f'{s["measured_ms"]:.3f}' for s in steps) or "-"
        simulated = " ".join(f'{s["simulated_ms"]:.3f}' for s in steps) or "-"
        worst = f"{100 * max(errors):.3f}%" if errors else "-"
        median = f"{100 * statistics.median(errors):.3f}%" if errors else "-"
        span = f'{100 * report["span"]["error"]:+.3f}%'
        print(f"| {name} | {len(steps)} | {measured} | {simulated} | {worst} | {median} | {span} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
