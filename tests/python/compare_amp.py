#!/usr/bin/env python3
"""ctest helper: runs the AMP what-if in C++ (whatif_amp) and in Python (scenarios/amp.py) on
one trace and checks that they print exactly the same text, so the same prediction to the ns.

    compare_amp.py WHATIF_AMP AMP_PY TRACE     (daydream importable, e.g. via PYTHONPATH)
"""
import subprocess
import sys


def main(whatif_amp: str, amp_py: str, trace: str) -> int:
    cpp = subprocess.run([whatif_amp, trace], capture_output=True, text=True)
    py = subprocess.run([sys.executable, amp_py, trace], capture_output=True, text=True)
    for name, run in (("whatif_amp", cpp), ("amp.py", py)):
        if run.returncode != 0:
            print(f"{name} failed with exit code {run.returncode}:\n{run.stderr}")
            return 1
    print(cpp.stdout, end="")
    rows = [line for line in cpp.stdout.splitlines() if line.startswith(("ProfilerStep", "makespan"))]
    if len(rows) < 2:
        print("no per-iteration prediction printed")
        return 1
    if cpp.stdout != py.stdout:
        print("MISMATCH: amp.py printed\n" + py.stdout)
        return 1
    print(f"C++ and Python predictions are identical ({len(rows) - 1} iterations, ns exact)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
