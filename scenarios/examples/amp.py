#!/usr/bin/env python3
"""What if the job used automatic mixed precision (AMP)? The Daydream paper's estimate.

Kernels that run on tensor cores under AMP take 1/3 of their time, every other GPU kernel 1/2;
copies, memsets, collectives and all CPU work keep their recorded durations. Tensor-core kernels
are those whose name contains "gemm", "wgrad" or "conv", in any case. scenarios/examples/whatif_amp.cpp (whatif_amp)
is the same script in C++; a ctest checks that both print the same prediction, to the ns.

    python3 scenarios/examples/amp.py TRACE
"""
import sys

import daydream

TENSOR_CORE = "(?i)gemm|wgrad|conv"


def main(trace: str) -> None:
    baseline = daydream.load(trace)
    amp = baseline.copy()  # what-ifs change a copy
    amp.select(kind="kernel", name=TENSOR_CORE).scale(1 / 3)
    amp.select(kind="kernel", name_not=TENSOR_CORE).scale(1 / 2)
    before, after = baseline.simulate(), amp.simulate()

    print(f"AMP what-if: {trace}\n{'iteration':<20} {'replay ms':>14} {'predicted ms':>14} {'predicted ns':>14}")
    for name, b, a in zip(after.iteration_names, before.iteration_times_ns, after.iteration_times_ns):
        print(f"{name:<20} {b / 1e6:14.6f} {a / 1e6:14.6f} {a:14d}")
    print(f"{'makespan':<20} {before.total_ns / 1e6:14.6f} {after.total_ns / 1e6:14.6f} {after.total_ns:14d}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} TRACE")
    try:
        main(sys.argv[1])
    except daydream.Error as e:
        sys.exit(f"error: {e}")
