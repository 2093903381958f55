#!/usr/bin/env python3
"""Runs `daydream validate --json` on every measured before/after pair of bounds.json and prints
the Markdown table of docs/validation.md: measured before and after, predicted, the errors of the
median and of the mean, the bound and whether the error is within it. A pair that fails shows its
error in its row.

Usage: validate_pairs.py [--shared ../shared] [--daydream build/bin/daydream] [--bounds FILE]
                         [--json] [--jobs N]

bounds.json is the one source of truth for the pairs, their specs and their bounds: the test
tests/python/test_validation.py reads it too (through load_pairs below).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys
from typing import Any, Optional

HERE = pathlib.Path(__file__).resolve().parent
BOUNDS = HERE / "bounds.json"
REPO = HERE.parents[1]
DEFAULT_SHARED = REPO.parent / "shared"


def load_pairs(bounds: pathlib.Path = BOUNDS) -> list[dict[str, Any]]:
    """The pairs of bounds.json: pair, before, after (relative to ../shared), scenario (None: not
    modelled yet), bound (None: not checked) and reason."""
    return json.loads(bounds.read_text())["pairs"]


def resolve(shared: pathlib.Path, relative: str) -> pathlib.Path:
    """A trace under the shared folder; a folder holding exactly one trace stands for that trace
    (the ResNet-50 DataLoader recordings are one file per folder)."""
    path = shared / relative
    if path.is_dir():
        traces = sorted(p for p in path.iterdir() if p.is_file() and (".json" in p.name or ".sqlite" in p.name))
        if len(traces) == 1:
            return traces[0]
    return path


# A scenario that changes nothing: its validation gives the measured columns of a pair whose own
# scenario fails or is not modelled yet, and the replay error of BEFORE.
NO_CHANGE = "faster_gpu:factor=1"


def validate(daydream: str, shared: pathlib.Path, pair: dict[str, Any], scenario: str) -> dict[str, Any]:
    """{"result": the validate JSON} or {"error": the message}."""
    command = [daydream, "validate", str(resolve(shared, pair["before"])), str(resolve(shared, pair["after"])),
               "--scenario", scenario, "--json"]
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:  # the CLI's logger prints "error: ..." on stdout (docs/cli.md)
        lines = [line for line in (out.stdout + out.stderr).splitlines() if line.startswith("error: ")]
        return {"error": lines[-1][len("error: "):] if lines else f"exit status {out.returncode}"}
    return {"result": json.loads(out.stdout)}


def run_pair(daydream: str, shared: pathlib.Path, pair: dict[str, Any]) -> dict[str, Any]:
    """The pair's validation ({"result"} or {"error"}; {} when not modelled yet), and when it has
    no result, {"reference": the no-change validation's JSON} for the measured columns."""
    outcome = validate(daydream, shared, pair, pair["scenario"]) if pair.get("scenario") else {}
    if "result" not in outcome:
        reference = validate(daydream, shared, pair, NO_CHANGE)
        if "result" in reference:
            outcome["reference"] = reference["result"]
    return outcome


def status(pair: dict[str, Any], outcome: dict[str, Any]) -> str:
    if not pair.get("scenario"):
        return pair.get("reason") or "not modelled yet"
    if "error" in outcome:
        return "fails: " + outcome["error"]
    bound: Optional[float] = pair.get("bound")
    error = outcome["result"]["error"]["mean"]
    if bound is None:
        return "no bound: " + (pair.get("reason") or "not set")
    if error is None:
        return "no error (measured mean is 0)"
    return "within bound" if abs(error) <= bound else "OVER BOUND"


def ms_pair(summary: dict[str, Any]) -> str:
    return f'{summary["median_ms"]:.1f} / {summary["mean_ms"]:.1f}'


def percent(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f}%"


def table_row(pair: dict[str, Any], outcome: dict[str, Any], shared: pathlib.Path) -> str:
    bound = "" if pair.get("bound") is None else f'{100 * pair["bound"]:.0f}%'
    scenario = f'`{pair["scenario"]}`' if pair.get("scenario") else "-"
    result = outcome.get("result")
    measured = result or outcome.get("reference")
    cells = ["-"] * 7
    if measured is not None:
        before, after = measured["before_measured"]["mean_ms"], measured["measured"]["mean_ms"]
        cells[:2] = [ms_pair(measured["before_measured"]), ms_pair(measured["measured"])]
        cells[4:7] = [percent((before - after) / after if after > 0 else None),
                      percent(measured["replay_error"]["mean"]), str(measured["compared"])]
    if result is not None:
        cells[2:4] = [ms_pair(result["predicted"]),
                      f'{percent(result["error"]["median"])} / {percent(result["error"]["mean"])}']
    text = status(pair, outcome).replace("|", "\\|").replace(str(shared), "../shared")
    return "| " + " | ".join([pair["pair"], scenario, *cells, bound, text]) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=pathlib.Path, default=DEFAULT_SHARED, help="the shared folder (../shared)")
    parser.add_argument("--daydream", default=str(REPO / "build" / "bin" / "daydream"))
    parser.add_argument("--bounds", type=pathlib.Path, default=BOUNDS)
    parser.add_argument("--json", action="store_true", help="print every pair's outcome as JSON instead")
    parser.add_argument("--jobs", type=int, default=1, help="pairs validated at once")
    args = parser.parse_args()
    args.shared = args.shared.resolve()
    if not args.shared.is_dir():
        print(f"{args.shared} is absent: no pairs to validate", file=sys.stderr)
        return 0
    pairs = load_pairs(args.bounds)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        outcomes = list(pool.map(lambda p: run_pair(args.daydream, args.shared, p), pairs))
    if args.json:
        print(json.dumps([{**p, **o} for p, o in zip(pairs, outcomes)], indent=1))
        return 0
    print("| pair | scenario | before measured ms (median / mean) | after measured ms (median / mean) "
          "| predicted ms (median / mean) | error (median / mean) | no-change error (mean) | BEFORE replay error (mean) "
          "| iterations compared | bound (\\|error of mean\\|) | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for pair, outcome in zip(pairs, outcomes):
        print(table_row(pair, outcome, args.shared))
    return 0


if __name__ == "__main__":
    sys.exit(main())
