"""Writes small Kineto Chrome-trace JSON files for the Python tests (the Python twin of
tests/unit/trace_builder.cpp). Modern dialect (cpu_op/cuda_runtime/kernel) or the legacy PyTorch
1.8/1.9 one (Operator/Runtime/Kernel). Times are in microseconds, as in Kineto files."""

import gzip
import json
from pathlib import Path

PID = 100


# A GPU like a V100 (80 SMs of 2048 threads, 64K registers, 96 KiB shared memory; compute 7.0),
# for traces whose kernels record their launch configuration.
V100_PROPERTIES = {"id": 0, "name": "Test V100", "computeMajor": 7, "computeMinor": 0, "numSms": 80,
                   "maxThreadsPerMultiprocessor": 2048, "regsPerMultiprocessor": 65536, "regsPerBlock": 65536,
                   "warpSize": 32, "sharedMemPerMultiprocessor": 98304}


class KinetoJson:
    def __init__(self, legacy: bool = False, device: dict | None = None):
        self.legacy = legacy
        self.events: list[dict] = []
        self.device = device or {"id": 0, "name": "Test GPU"}

    def _complete(self, cat, name, ts, dur, pid, tid, args=None):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                            "args": args or {}})
        return self

    def _cpu_tid(self, tid):
        return str(tid) if self.legacy else tid

    def _gpu_tid(self, stream):
        return f"stream {stream}" if self.legacy else stream

    def cpu_op(self, name, ts, dur, tid=1, args=None):
        """An operator; `args` such as {"Input Dims": [[2, 3]], "Input type": ["float"]} (record_shapes)."""
        return self._complete("Operator" if self.legacy else "cpu_op", name, ts, dur, PID, self._cpu_tid(tid), args)

    def annotation(self, name, ts, dur, tid=1):
        """A user annotation: ProfilerStep#N, optimizer steps, record_function ranges."""
        return self._complete("Operator" if self.legacy else "user_annotation", name, ts, dur, PID, self._cpu_tid(tid))

    def runtime(self, name, ts, dur, correlation, tid=1):
        ext = "external id" if self.legacy else "External id"
        return self._complete("Runtime" if self.legacy else "cuda_runtime", name, ts, dur, PID, self._cpu_tid(tid),
                              {"cbid": 211, "correlation": correlation, ext: correlation})

    def kernel(self, name, ts, dur, correlation, stream=7, grid=None, block=128, registers=32):
        """A kernel; with `grid` (blocks) its args record a launch configuration as Kineto does."""
        args = {"device": 0, "stream": stream, "correlation": correlation}
        if grid is not None:
            args.update({"grid": [grid, 1, 1], "block": [block, 1, 1], "registers per thread": registers,
                         "shared memory": 0})
        return self._complete("Kernel" if self.legacy else "kernel", name, ts, dur, 0, self._gpu_tid(stream), args)

    def memcpy(self, name, ts, dur, correlation, stream=7):
        return self._complete("Memcpy" if self.legacy else "gpu_memcpy", name, ts, dur, 0, self._gpu_tid(stream),
                              {"device": 0, "stream": stream, "correlation": correlation, "bytes": 4096})

    def launch(self, kernel_name, ts, correlation, kernel_ts, kernel_dur, stream=7, tid=1, dur=5):
        """A cudaLaunchKernel call and the kernel it launched."""
        self.runtime("cudaLaunchKernel", ts, dur, correlation, tid)
        return self.kernel(kernel_name, kernel_ts, kernel_dur, correlation, stream)

    def raw(self, event: dict):
        self.events.append(event)
        return self

    def document(self) -> dict:
        return {"schemaVersion": 1, "deviceProperties": [self.device], "traceEvents": self.events}

    def write(self, path) -> Path:
        """Writes the trace (gzip-compressed when the name ends in .gz) and returns its path."""
        path = Path(path)
        text = json.dumps(self.document(), indent=1)
        if path.suffix == ".gz":
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        return path
