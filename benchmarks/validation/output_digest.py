#!/usr/bin/env python3
"""Digest of every CLI output on every shared trace: proof that a refactoring changed no behaviour.

For each trace under ../shared (traces/ and pairs/) it runs `replay --json`, `stats --json`,
`layers --json` and `predict --json --scenario S` for every scenario `daydream scenarios` lists
(defaults), and prints one line per run: trace, command, exit status and the SHA-256 of stdout and
stderr together. Two trees behave the same when their digests are equal line for line:

    python3 benchmarks/validation/output_digest.py build/bin/daydream > before.txt
    ... change the code, rebuild ...
    python3 benchmarks/validation/output_digest.py build/bin/daydream > after.txt
    diff before.txt after.txt

Errors are part of the behaviour: a scenario that refuses a trace is digested with its message.
Paths in the output are the ones given, so run both from the same directory.
"""
import argparse
import concurrent.futures
import hashlib
import os
import pathlib
import re
import subprocess
import sys

from shared_traces import trace_files


def scenario_names(listing: str) -> list[str]:
    """The names in the output of `daydream scenarios`."""
    return [m.group(1) for m in re.finditer(r"^([a-z_0-9]+):", listing, re.MULTILINE)]


def commands(cli: str, trace: pathlib.Path, scenarios: list[str]) -> list[list[str]]:
    runs = [[cli, what, "--json", str(trace)] for what in ("replay", "stats", "layers")]
    runs += [[cli, "predict", "--json", "--scenario", s, str(trace)] for s in scenarios]
    return runs


def digest(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, timeout=600)
    h = hashlib.sha256(done.stdout + b"\0" + done.stderr).hexdigest()[:16]
    return f"{command[-1]}\t{' '.join(command[1:-1])}\trc={done.returncode}\t{h}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cli", help="the daydream executable")
    parser.add_argument("shared", nargs="?", default=str(pathlib.Path(__file__).resolve().parents[3] / "shared"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    shared = pathlib.Path(args.shared)
    if not shared.is_dir():
        print(f"skipped: no shared traces at {shared}", file=sys.stderr)
        return 0
    listing = subprocess.run([args.cli, "scenarios"], capture_output=True, check=True).stdout
    print(f"-\tscenarios\trc=0\t{hashlib.sha256(listing).hexdigest()[:16]}")
    scenarios = scenario_names(listing.decode())
    runs = [c for t in trace_files(shared) for c in commands(args.cli, t, scenarios)]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(digest, runs):  # map keeps the input order: the output is deterministic
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
