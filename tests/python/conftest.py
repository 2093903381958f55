"""Shared fixtures of the daydream Python tests: the bundled example trace, the real trace in
../shared/traces (skipped with a visible reason when absent), and small hand-built traces."""

import glob
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from kineto_builder import KinetoJson

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_TRACE = REPO / "tests" / "data" / "example" / "synthetic_training.json.gz"
REAL_TRACE_GLOB = str(REPO.parent / "shared" / "traces" / "resnet50-v100-dataloader" / "workers0" / "*.json.gz")


@pytest.fixture(scope="session")
def example_trace() -> Path:
    assert EXAMPLE_TRACE.exists(), EXAMPLE_TRACE
    return EXAMPLE_TRACE


@pytest.fixture(scope="session")
def real_trace() -> Path:
    found = sorted(glob.glob(REAL_TRACE_GLOB))
    if not found:
        pytest.skip(f"real trace absent: {REAL_TRACE_GLOB} (the shared traces folder is not next to the checkout)")
    return Path(found[0])


def two_step_trace() -> KinetoJson:
    """Two ProfilerSteps on one thread. Step 1: conv and relu kernels, a copy, a device sync, an
    optimizer op. Step 2: one gemm. Stream 7."""
    t = KinetoJson()
    t.annotation("ProfilerStep#1", 0, 600)
    t.cpu_op("aten::conv2d", 10, 30)
    t.launch("implicit_convolve_sgemm", 20, 1, kernel_ts=35, kernel_dur=200)
    t.cpu_op("aten::relu", 50, 30)
    t.launch("vectorized_elementwise_kernel<relu>", 60, 2, kernel_ts=235, kernel_dur=100)
    t.cpu_op("aten::copy_", 90, 30)
    t.runtime("cudaMemcpyAsync", 100, 10, 3)
    t.memcpy("Memcpy DtoH (Device -> Pageable)", 335, 50, 3)
    t.runtime("cudaDeviceSynchronize", 130, 260, 4)
    t.cpu_op("Optimizer.step#SGD.step", 400, 100)
    t.annotation("ProfilerStep#2", 600, 300)
    t.cpu_op("aten::mm", 610, 30)
    t.launch("volta_sgemm_128x64_nn", 620, 5, kernel_ts=630, kernel_dur=150)
    t.runtime("cudaDeviceSynchronize", 650, 140, 6)
    t.cpu_op("aten::add_", 800, 50)
    return t


def one_kernel_trace(kernel_us: int = 100) -> KinetoJson:
    """One ProfilerStep (0..200 us): aten::mm launches gemm_kernel (30 us, `kernel_us` long), a
    device sync waits for it, then a CPU op 'after_sync'."""
    t = KinetoJson()
    t.annotation("ProfilerStep#1", 0, 200)
    t.cpu_op("aten::mm", 10, 20)
    t.launch("gemm_kernel", 15, 1, kernel_ts=30, kernel_dur=kernel_us)
    t.runtime("cudaDeviceSynchronize", 40, 95, 2)
    t.cpu_op("after_sync", 140, 10)
    return t


def two_stream_trace() -> KinetoJson:
    """One step whose kernels run on two streams: k0 then k1 on stream 7, k2 on stream 8, then a
    device sync and a CPU op 'after_sync'. Recorded: k1 ends at 80 us, k2 at 135 us."""
    t = KinetoJson()
    t.annotation("ProfilerStep#1", 0, 200)
    t.launch("k0_setup", 10, 1, kernel_ts=20, kernel_dur=10, stream=7)
    t.launch("k1_conv", 20, 2, kernel_ts=30, kernel_dur=50, stream=7)
    t.launch("k2_gemm", 30, 3, kernel_ts=35, kernel_dur=100, stream=8)
    t.runtime("cudaDeviceSynchronize", 40, 100, 4)
    t.cpu_op("after_sync", 150, 20)
    return t


@pytest.fixture
def small_trace(tmp_path) -> Path:
    return two_step_trace().write(tmp_path / "small.json")


@pytest.fixture
def stream_trace(tmp_path) -> Path:
    return two_stream_trace().write(tmp_path / "streams.json.gz")


@pytest.fixture(scope="session")
def cli() -> str:
    """The daydream CLI built next to the module (ctest sets DAYDREAM_CLI), or skip."""
    path = os.environ.get("DAYDREAM_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("DAYDREAM_CLI not set (run through ctest to compare with the CLI)")
    return path


def releases_gil(call, tries: int, seconds: float = 1.0) -> bool:
    """True when the main thread ran while `call()` (repeated on a worker thread, at least `tries`
    times and for at least `seconds`) was inside C++: with a huge switch interval the main thread's
    counter can only move while the worker has released the GIL. The time floor is what makes a
    call that does release it pass under load: a main thread the OS does not schedule during the
    worker's first `tries` calls (ctest -j runs other tests beside this one) gets more chances."""
    counter, moved, done = [0], [], threading.Event()

    def worker():
        deadline = time.monotonic() + seconds
        calls = 0
        while calls < tries or time.monotonic() < deadline:
            before = counter[0]
            call()
            calls += 1
            if counter[0] != before:
                moved.append(counter[0] - before)
                break
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        thread = threading.Thread(target=worker)
        thread.start()
        while not done.is_set():
            counter[0] += 1
            time.sleep(0.0001)  # lets the worker take the GIL back after each call
        thread.join()
    finally:
        sys.setswitchinterval(old)
    return bool(moved)
