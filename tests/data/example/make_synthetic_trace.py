#!/usr/bin/env python3
"""Writes a small SYNTHETIC PyTorch-profiler (Kineto) trace of a CNN-like training loop.

It is not a measurement: every duration below is made up (seeded, deterministic) to look like a
small convolutional network trained with SGD on one GPU. It exists so the README's main job runs
on data the project owns until a trace recorded on a real GPU is bundled.

Structure per step (ProfilerStep#N on the main thread):
  DataLoader __next__ (CPU only) -> H2D copy of the batch -> forward ops (each launches kernels)
  -> loss.backward(): the autograd thread runs backward ops while the main thread waits
  -> optimizer step (many small kernels) -> loss.item() (D2H copy + stream synchronize).

Usage: make_synthetic_trace.py OUT.json.gz [--steps N] [--layers N]
"""
import argparse
import gzip
import json
import random

PID, MAIN, AUTOGRAD, STREAM = 4242, 4242, 4260, 7


class Writer:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.events = []
        self.correlation = 1000

    def jitter(self, us, spread=0.1):
        return round(us * (1 + self.rng.uniform(-spread, spread)), 3)

    def cpu(self, name, ts, dur, tid, cat="cpu_op"):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid,
                            "ts": round(ts, 3), "dur": round(dur, 3), "args": {}})

    def launch(self, call, ts, tid, gpu_name, gpu_start, gpu_dur, cat="kernel", extra=None):
        """A runtime call at ts launching one GPU activity; returns the call's end."""
        self.correlation += 1
        call_dur = self.jitter(6.0)
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": PID, "tid": tid,
                            "ts": round(ts, 3), "dur": call_dur,
                            "args": {"cbid": 211, "correlation": self.correlation}})
        args = {"device": 0, "stream": STREAM, "correlation": self.correlation}
        args.update(extra or {})
        self.events.append({"ph": "X", "cat": cat, "name": gpu_name, "pid": 0, "tid": STREAM,
                            "ts": round(gpu_start, 3), "dur": round(gpu_dur, 3), "args": args})
        return ts + call_dur


class Gpu:
    """The stream: a launch at t starts at max(t + latency, previous end + gap)."""

    def __init__(self):
        self.free = 0.0

    def place(self, launch_ts, dur, latency=5.0, gap=1.0):
        start = max(launch_ts + latency, self.free + gap)
        self.free = start + dur
        return start


def op_with_kernels(w, gpu, name, t, tid, kernels):
    """An operator that launches its kernels; returns the time it ends."""
    begin = t
    t += w.jitter(12.0)
    for kname, kdur in kernels:
        dur = w.jitter(kdur)
        start = gpu.place(t, dur)
        t = w.launch("cudaLaunchKernel", t, tid, kname, start, dur) + w.jitter(4.0)
    t += w.jitter(6.0)
    w.cpu(name, begin, t - begin, tid)
    return t


def step(w, gpu, n, t, layers):
    begin = t
    t += 5.0
    load = w.jitter(9000.0)  # CPU data loading and augmentation
    w.cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, load, MAIN, "user_annotation")
    t += load + w.jitter(20.0)
    copy = w.jitter(900.0)
    start = gpu.place(t, copy)
    t = w.launch("cudaMemcpyAsync", t, MAIN, "Memcpy HtoD (Pinned -> Device)", start, copy, "gpu_memcpy",
                 {"bytes": 19267584}) + w.jitter(10.0)
    for layer in range(layers):  # forward
        t = op_with_kernels(w, gpu, "aten::conv2d", t, MAIN, [("implicit_convolve_sgemm", 180 + 40 * layer)])
        t = op_with_kernels(w, gpu, "aten::batch_norm", t, MAIN, [("cudnn::bn_fw_tr_1C11_kernel_NCHW", 60)])
        t = op_with_kernels(w, gpu, "aten::relu_", t, MAIN, [("vectorized_elementwise_kernel<relu>", 25)])
    t = op_with_kernels(w, gpu, "aten::cross_entropy_loss", t, MAIN, [("nll_loss_forward_reduce_kernel", 8)])
    called_backward = t
    b = t + w.jitter(60.0)  # the autograd thread wakes up
    for layer in reversed(range(layers)):
        b = op_with_kernels(w, gpu, "ReluBackward0", b, AUTOGRAD, [("threshold_backward_kernel", 30)])
        b = op_with_kernels(w, gpu, "CudnnBatchNormBackward0", b, AUTOGRAD, [("cudnn::bn_bw_1C11_kernel", 90)])
        b = op_with_kernels(w, gpu, "ConvolutionBackward0", b, AUTOGRAD,
                            [("wgrad_alg0_engine", 260 + 50 * layer), ("dgrad_engine", 220 + 40 * layer)])
    t = b + w.jitter(80.0)  # the main thread wakes up
    w.cpu("autograd::engine::backward", called_backward, t - called_backward, MAIN, "user_annotation")
    opt_begin = t
    t += w.jitter(30.0)
    for layer in range(layers * 3):
        t = op_with_kernels(w, gpu, "aten::add_", t, MAIN, [("multi_tensor_apply_kernel<sgd>", 6)])
    w.cpu("Optimizer.step#SGD.step", opt_begin, t - opt_begin, MAIN, "user_annotation")
    t += w.jitter(15.0)
    copy = 2.0
    start = gpu.place(t, copy)
    t = w.launch("cudaMemcpyAsync", t, MAIN, "Memcpy DtoH (Device -> Pageable)", start, copy, "gpu_memcpy",
                 {"bytes": 4})
    t = max(t, start + copy + 3.0)  # the pageable copy blocks until done
    w.events[-2]["dur"] = round(t - w.events[-2]["ts"], 3)
    t += w.jitter(20.0)
    w.cpu(f"ProfilerStep#{n}", begin, t - begin, MAIN, "user_annotation")
    return t + w.jitter(30.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--layers", type=int, default=8)
    args = parser.parse_args()
    w, gpu = Writer(seed=20200715), Gpu()
    t = 1_000_000.0
    for n in range(1, args.steps + 1):
        t = step(w, gpu, n, t, args.layers)
    w.events.sort(key=lambda e: (e["ts"], e["tid"] if isinstance(e["tid"], int) else 0, e["name"]))
    meta = [{"ph": "M", "name": "thread_name", "pid": PID, "tid": tid, "args": {"name": name}}
            for tid, name in ((MAIN, "python main (synthetic)"), (AUTOGRAD, "autograd (synthetic)"))]
    doc = {"schemaVersion": 1, "traceName": "SYNTHETIC daydream example (not a measurement)",
           "daydream_synthetic": True,
           "deviceProperties": [{"id": 0, "name": "Synthetic GPU (made-up durations)"}],
           "traceEvents": meta + w.events}
    with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(json.dumps(doc, indent=None, separators=(",", ":")).encode())


if __name__ == "__main__":
    main()
