#!/usr/bin/env python3
"""The CUPTI collector's first runs on a GPU (docs/collector.md, "Not yet run on a GPU"): record.py's
ResNet-50 fp32 workload trained once without any tool and once with libdaydream_cupti.so
injected (CUDA_INJECTION64_PATH), each step marked with an NVTX range `ProfilerStep#N` as
docs/collector.md asks, each in its own process. Writes OUT/collector_trace.json.gz (the
collector's trace, gzip-compressed) and OUT/collector_runs.json (per run: the injection, the
mean step time, the exit status and the tool's stderr lines), so the collector's overhead and its
trace can both be checked afterwards (benchmarks/gpu/README.md).

Usage: collector_run.py --out DIR --library PATH [--quick] [--device cuda|cpu]
       collector_run.py --child [--quick] [--device cuda|cpu]     (one run; what the parent starts)
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
WARMUP_STEPS, MARKED_STEPS = 5, 6


def child(quick: bool, device: str) -> None:
    """Trains WARMUP_STEPS + MARKED_STEPS steps, the marked ones in NVTX ranges, and prints the
    mean time of the marked steps as JSON on stdout."""
    import torch
    sys.path.insert(0, str(HERE))
    import record  # the same workload definition as the profiled runs

    ctx = record.Context(torch.device(device), quick)
    step = record.image_run(record.resnet50, 64, 224, record.sgd)(ctx)
    for _ in range(WARMUP_STEPS):
        step()
    ctx.synchronize()
    nvtx = torch.cuda.nvtx if ctx.device.type == "cuda" else None
    start = time.perf_counter()
    for i in range(MARKED_STEPS):
        if nvtx:
            nvtx.range_push(f"ProfilerStep#{i}")
        step()
        if nvtx:
            nvtx.range_pop()
    ctx.synchronize()
    print(json.dumps({"mean_step_ms": (time.perf_counter() - start) * 1e3 / MARKED_STEPS}))


def cupti_folder(library: pathlib.Path) -> str | None:
    """Where the library's libcupti comes from: None when the toolkit path it was linked with
    (its RPATH, /usr/local/cuda) has it, else the folder of the libcupti that PyTorch's wheels
    bring (site-packages/nvidia/.../lib), for LD_LIBRARY_PATH."""
    needed = subprocess.run(["ldd", str(library)], capture_output=True, text=True).stdout
    if "libcupti" in needed and "not found" not in needed:
        return None
    for root in map(pathlib.Path, sys.path):
        for found in sorted((root / "nvidia").glob("**/libcupti.so*")) if (root / "nvidia").is_dir() else []:
            return str(found.parent)
    return None


def run(library: pathlib.Path | None, trace: pathlib.Path, quick: bool, device: str) -> dict:
    env = dict(os.environ)
    extra = None
    if library is not None:
        env["CUDA_INJECTION64_PATH"] = str(library)
        env["DAYDREAM_TRACE_FILE"] = str(trace)
        extra = cupti_folder(library)
        if extra:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (extra, env.get("LD_LIBRARY_PATH")) if p)
    command = [sys.executable, __file__, "--child", "--device", device] + (["--quick"] if quick else [])
    began = time.perf_counter()
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    entry = {"injected": library is not None, "cupti_from": (extra or "the library's RPATH") if library else None, "exit_status": out.returncode,
             "seconds": round(time.perf_counter() - began, 2),
             "tool_lines": [line for line in out.stderr.splitlines() if "daydream" in line][:20]}
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode == 0 and lines:
        entry.update(json.loads(lines[-1]))
    else:
        entry["stderr_tail"] = out.stderr[-2000:]
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--library", type=pathlib.Path, help="libdaydream_cupti.so")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(args.quick, args.device)
        return 0
    if args.out is None or args.library is None:
        parser.error("--out and --library are required")
    args.out.mkdir(parents=True, exist_ok=True)
    trace = args.out / "collector_trace.json"
    runs = [run(None, trace, args.quick, args.device), run(args.library.resolve(), trace, args.quick, args.device)]
    if trace.exists():
        with open(trace, "rb") as source, gzip.open(str(trace) + ".gz", "wb", compresslevel=9) as target:
            shutil.copyfileobj(source, target)
        trace.unlink()
        runs[1]["trace"] = trace.name + ".gz"
    plain, injected = runs
    if "mean_step_ms" in plain and "mean_step_ms" in injected:
        injected["overhead"] = round(injected["mean_step_ms"] / plain["mean_step_ms"] - 1, 4)
    (args.out / "collector_runs.json").write_text(json.dumps(runs, indent=1) + "\n")
    for r in runs:
        print(json.dumps({k: v for k, v in r.items() if k != "stderr_tail"}), flush=True)
    return 0 if all(r["exit_status"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
