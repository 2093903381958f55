#!/usr/bin/env python3
"""Records the project's reference workloads on whatever GPU a session is lent: one Kineto trace
(torch.profiler, record_shapes) per workload and variant, and each variant's step time measured
without the profiler. The same script, unchanged, on two GPUs gives cross-GPU pairs (issue 16);
on one GPU its variants give measured before/after pairs of one optimization each (amp, fused
optimizer, channels_last, DataLoader workers, CUDA graphs) in Kineto form with shapes, which the
Nsight pairs under ../shared lack. benchmarks/gpu/README.md says how to run it on the device and
what to do with its output; benchmarks/gpu/pairs.json lists the pairs it makes.

Usage:
  record.py --out DIR [--device cuda|cpu] [--quick] [--only WORKLOAD[/VARIANT] ...]
            [--budget SECONDS] [--list]

Writes DIR/<gpu>/<workload>/<variant>.json.gz and DIR/<gpu>/manifest.json (the device, the
software versions and, per run, the settings, the measured mean step time and any error), where
<gpu> is the device's name in lower case (e.g. nvidia-h200). --quick shrinks every model and batch
so that the whole script runs on a CPU in a minute (the test tests/python/test_gpu_recorder.py);
its traces are for checking the script, never for validation. A variant that fails is recorded
as failed in the manifest and the others go on; --budget stops starting new runs once that many
seconds have passed, so a device call ends inside its limit.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import pathlib
import re
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch
import torch.nn as nn

# Steps of each run: untimed warm-up (cuDNN heuristics, allocator, autotuning of the first
# shapes), steps timed without the profiler, then the profiler's schedule: one step waiting, two
# warming up (the profiler's own start cost stays out of the trace) and ACTIVE recorded.
WARMUP_STEPS = 5
TIMED_STEPS = 10
ACTIVE_STEPS = 4


@dataclass
class Run:
    """One workload in one variant: how to build it and the settings the manifest records."""
    workload: str
    variant: str
    build: Callable[["Context"], Callable[[], None]]  # returns the step function
    settings: dict = field(default_factory=dict)


@dataclass
class Context:
    device: torch.device
    quick: bool

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


# ---------------------------------------------------------------------------------------------
# Models. ResNet-50 comes from torchvision (on the device image); the ViT is written out here so
# that its definition cannot change with a library version between two GPUs' recordings.


class PatchTransformer(nn.Module):
    """ViT-B/16 shape by default (12 blocks, width 768, 12 heads, MLP 3072, 224x224 images in
    16x16 patches, pre-norm, GELU), as timm's vit_base_patch16_224 without its weights."""

    def __init__(self, image=224, patch=16, width=768, depth=12, heads=12, mlp=3072, classes=1000):
        super().__init__()
        self.embed = nn.Conv2d(3, width, kernel_size=patch, stride=patch)
        tokens = (image // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.position = nn.Parameter(torch.zeros(1, tokens + 1, width))
        layer = nn.TransformerEncoderLayer(width, heads, mlp, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.position
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def resnet50(ctx: Context) -> nn.Module:
    import torchvision  # on the device image; the workload is skipped where it is missing
    return torchvision.models.resnet18(num_classes=10) if ctx.quick else torchvision.models.resnet50()


def vit(ctx: Context) -> nn.Module:
    if ctx.quick:
        return PatchTransformer(image=32, patch=8, width=32, depth=2, heads=2, mlp=64, classes=10)
    return PatchTransformer()


# ---------------------------------------------------------------------------------------------
# Steps


def images(ctx: Context, batch: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(batch, 3, size, size, generator=generator)
    y = torch.randint(0, 10, (batch,), generator=generator)
    return x.to(ctx.device), y.to(ctx.device)


def training_step(ctx: Context, model: nn.Module, optimizer: torch.optim.Optimizer, batch: Callable,
                  dtype: Optional[torch.dtype] = None, scaler=None) -> Callable[[], None]:
    """forward, loss, backward, optimizer step: under autocast at `dtype` where given, with a
    GradScaler where given, as PyTorch's AMP recipe writes it."""
    loss_fn = nn.CrossEntropyLoss()

    def step():
        x, y = batch()
        optimizer.zero_grad(set_to_none=True)
        autocast = torch.autocast(ctx.device.type, dtype=dtype) if dtype else contextlib.nullcontext()
        with autocast:
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()

    return step


def image_run(make_model, batch_size, image_size, optimizer_of, dtype=None, scaler=False, channels_last=False):
    def build(ctx: Context):
        model = make_model(ctx).to(ctx.device)
        size = 32 if ctx.quick else image_size
        batch = 2 if ctx.quick else batch_size
        x, y = images(ctx, batch, size)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        grad_scaler = torch.amp.GradScaler(ctx.device.type) if scaler else None
        return training_step(ctx, model, optimizer_of(model), lambda: (x, y), dtype, grad_scaler)
    return build


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def adamw(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4)  # PyTorch's default: foreach on CUDA


def adamw_fused(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)


class SyntheticImages(torch.utils.data.Dataset):
    """Images made on the CPU per sample (random pixels, normalised, flipped): a loader whose CPU
    cost per batch is fixed, so that more workers show as a shorter wait for data."""

    def __init__(self, size: int, length: int):
        self.size, self.length = size, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        generator = torch.Generator().manual_seed(i)
        x = torch.rand(3, self.size, self.size, generator=generator)
        x = ((x - 0.45) / 0.225).flip(-1)
        return x, i % 10


def loader_run(workers: int):
    """ResNet-50 fed by a DataLoader with `workers` worker processes (0: the main thread loads)."""
    def build(ctx: Context):
        torch.set_num_threads(1)  # the same CPU cost per sample in the main process as in a worker
        model = resnet50(ctx).to(ctx.device)
        size, batch = (32, 2) if ctx.quick else (224, 64)
        steps = WARMUP_STEPS + TIMED_STEPS + 3 + ACTIVE_STEPS
        data = SyntheticImages(size, batch * steps * 2)
        loader = torch.utils.data.DataLoader(data, batch_size=batch, num_workers=workers,
                                             pin_memory=ctx.device.type == "cuda",
                                             persistent_workers=workers > 0, prefetch_factor=2 if workers else None)
        batches = iter(loader)

        def batch():
            nonlocal batches
            try:
                x, y = next(batches)
            except StopIteration:
                batches = iter(loader)
                x, y = next(batches)
            return x.to(ctx.device, non_blocking=True), y.to(ctx.device, non_blocking=True)
        return training_step(ctx, model, sgd(model), batch)
    return build


def graphed_run(ctx: Context):
    """ResNet-50 fp32, the whole training step captured once as a CUDA graph and replayed
    (PyTorch's 'whole network capture' recipe; SGD keeps no state the capture could miss)."""
    if ctx.device.type != "cuda":
        raise RuntimeError("CUDA graphs need a CUDA device")
    model = resnet50(ctx).to(ctx.device)
    optimizer = sgd(model)
    loss_fn = nn.CrossEntropyLoss()
    static_x, static_y = images(ctx, 2 if ctx.quick else 64, 32 if ctx.quick else 224)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as the recipe asks
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(static_x), static_y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss_fn(model(static_x), static_y).backward()
        optimizer.step()
    fresh_x, fresh_y = images(ctx, static_x.shape[0], static_x.shape[-1])

    def step():
        static_x.copy_(fresh_x)
        static_y.copy_(fresh_y)
        graph.replay()
    return step


def runs() -> list[Run]:
    """Every workload and variant, in the order they run (the first of each workload is the
    'before' of its pairs, so a budget cut keeps it)."""
    fp16, bf16 = torch.float16, torch.bfloat16
    return [
        Run("resnet50", "fp32", image_run(resnet50, 64, 224, sgd), {"batch": 64, "optimizer": "SGD momentum"}),
        Run("resnet50", "amp_fp16", image_run(resnet50, 64, 224, sgd, fp16, scaler=True),
            {"batch": 64, "autocast": "float16", "grad_scaler": True}),
        Run("resnet50", "amp_bf16", image_run(resnet50, 64, 224, sgd, bf16), {"batch": 64, "autocast": "bfloat16"}),
        Run("resnet50", "channels_last", image_run(resnet50, 64, 224, sgd, channels_last=True),
            {"batch": 64, "memory_format": "channels_last"}),
        Run("resnet50", "cuda_graph", graphed_run, {"batch": 64, "cuda_graph": "whole step"}),
        Run("resnet50_loader", "workers0", loader_run(0), {"batch": 64, "num_workers": 0}),
        Run("resnet50_loader", "workers4", loader_run(4), {"batch": 64, "num_workers": 4}),
        Run("vit_b16", "fp32", image_run(vit, 32, 224, adamw), {"batch": 32, "optimizer": "AdamW foreach"}),
        Run("vit_b16", "amp_bf16", image_run(vit, 32, 224, adamw, bf16), {"batch": 32, "autocast": "bfloat16"}),
        Run("vit_b16", "amp_fp16", image_run(vit, 32, 224, adamw, fp16, scaler=True),
            {"batch": 32, "autocast": "float16", "grad_scaler": True}),
        Run("vit_b16", "fused_adamw", image_run(vit, 32, 224, adamw_fused), {"batch": 32, "optimizer": "AdamW fused"}),
    ]


# ---------------------------------------------------------------------------------------------
# Recording


def timed_mean_ms(ctx: Context, step: Callable[[], None], steps: int) -> float:
    """Mean wall time of `steps` back-to-back steps, the GPU drained before and after (the CPU
    runs ahead inside, as in training)."""
    ctx.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    ctx.synchronize()
    return (time.perf_counter() - start) * 1e3 / steps


def profile(ctx: Context, step: Callable[[], None], path: pathlib.Path) -> None:
    """ACTIVE_STEPS steps under torch.profiler, each marked ProfilerStep#N, written gzip-compressed."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if ctx.device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    plain = path.with_suffix("")  # .json
    schedule = torch.profiler.schedule(wait=1, warmup=2, active=ACTIVE_STEPS, repeat=1)
    with torch.profiler.profile(activities=activities, schedule=schedule, record_shapes=True,
                                on_trace_ready=lambda p: p.export_chrome_trace(str(plain))) as profiler:
        for _ in range(1 + 2 + ACTIVE_STEPS):
            step()
            profiler.step()
    ctx.synchronize()
    with open(plain, "rb") as source, gzip.open(path, "wb", compresslevel=9) as target:
        shutil.copyfileobj(source, target)
    plain.unlink()


def record(ctx: Context, run: Run, folder: pathlib.Path) -> dict:
    entry = {"workload": run.workload, "variant": run.variant, "settings": run.settings}
    began = time.perf_counter()
    try:
        step = run.build(ctx)
        for _ in range(WARMUP_STEPS):
            step()
        entry["measured_mean_ms"] = round(timed_mean_ms(ctx, step, TIMED_STEPS), 4)
        entry["measured_steps"] = TIMED_STEPS
        trace = folder / run.workload / f"{run.variant}.json.gz"
        trace.parent.mkdir(parents=True, exist_ok=True)
        profile(ctx, step, trace)
        entry["trace"] = str(trace.relative_to(folder))
        entry["trace_bytes"] = trace.stat().st_size
        entry["profiled_steps"] = ACTIVE_STEPS
    except Exception as error:  # one failing variant must not cost the others their device time
        entry["error"] = f"{type(error).__name__}: {error}"
        entry["traceback"] = traceback.format_exc(limit=4)
    finally:
        if ctx.device.type == "cuda":
            torch.cuda.empty_cache()
    entry["seconds"] = round(time.perf_counter() - began, 2)
    return entry


def device_facts(ctx: Context) -> dict:
    facts = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0],
             "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
             "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
             "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "quick": ctx.quick}
    if ctx.device.type == "cuda":
        p = torch.cuda.get_device_properties(ctx.device)
        facts.update({"name": p.name, "capability": f"{p.major}.{p.minor}", "multiprocessors": p.multi_processor_count,
                      "memory_bytes": p.total_memory})
    else:
        facts["name"] = "cpu"
    return facts


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def selected(all_runs: list[Run], only: list[str]) -> list[Run]:
    if not only:
        return all_runs
    keep = [r for r in all_runs if r.workload in only or f"{r.workload}/{r.variant}" in only]
    if not keep:
        raise SystemExit(f"--only {' '.join(only)} names no run; --list shows them")
    return keep


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="tiny models and batches (checks the script)")
    parser.add_argument("--only", nargs="*", default=[], help="WORKLOAD or WORKLOAD/VARIANT")
    parser.add_argument("--budget", type=float, default=float("inf"), help="seconds after which no run starts")
    parser.add_argument("--list", action="store_true", help="print the runs and exit")
    args = parser.parse_args()
    chosen = selected(runs(), args.only)
    if args.list:
        for r in chosen:
            print(f"{r.workload}/{r.variant}")
        return 0
    if args.out is None:
        parser.error("--out is required")
    ctx = Context(torch.device(args.device), args.quick)
    facts = device_facts(ctx)
    folder = args.out / (slug(facts["name"]) + ("-quick" if args.quick else ""))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    entries = []
    for run in chosen:
        if time.perf_counter() - started > args.budget:
            entries.append({"workload": run.workload, "variant": run.variant, "error": "skipped: --budget spent"})
            continue
        entry = record(ctx, run, folder)
        entries.append(entry)
        outcome = entry.get("error") or f"{entry['measured_mean_ms']:.2f} ms a step, {entry['trace_bytes']} B of trace"
        print(f"{run.workload}/{run.variant}: {outcome} ({entry['seconds']} s)", flush=True)
    manifest = {"device": facts, "steps": {"warmup": WARMUP_STEPS, "timed": TIMED_STEPS, "profiled": ACTIVE_STEPS},
                "runs": entries}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    failed = [e for e in entries if "error" in e]
    print(f"{len(entries) - len(failed)} of {len(entries)} runs recorded in {folder}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
