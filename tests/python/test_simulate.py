"""Graph.simulate / Result, schedule policies, Graph.replay, and simulating without the GIL."""

import json
import subprocess
import sys
import threading

import pytest

import daydream
from conftest import releases_gil


def test_result_on_example(example_trace):
    g = daydream.load(example_trace)
    r = g.simulate()
    assert isinstance(r, daydream.Result)
    assert r.schedule == "trace_order"
    assert r.iteration_names == g.iterations
    assert len(r.iteration_times_ms) == len(r.measured_iteration_times_ms) == 4
    assert all(isinstance(x, float) for x in r.iteration_times_ms)
    assert r.iteration_times_ms == [ns / 1e6 for ns in r.iteration_times_ns]
    assert r.measured_iteration_times_ms == [ns / 1e6 for ns in r.measured_iteration_times_ns]
    for sim, measured in zip(r.iteration_times_ms, r.measured_iteration_times_ms):
        assert sim == pytest.approx(measured, rel=2.5e-3)
    assert r.total_ms == r.total_ns / 1e6 >= sum(r.iteration_times_ms) * 0.99
    path = r.critical_path
    assert path and all(isinstance(t, daydream.Task) for t in path)
    assert r.end_ns(path[-1]) == max(r.end_ns(t) for t in g.select(unit=path[-1].unit))
    for a, b in zip(path, path[1:]):  # a chain in time
        assert r.start_ns(a) <= r.start_ns(b)
    assert "trace_order" in repr(r)
    assert r.graph is g or len(r.graph) == len(g)


def test_simulate_is_deterministic_and_sees_changes(example_trace):
    g = daydream.load(example_trace)
    a, b = g.simulate(), g.simulate()
    assert a.iteration_times_ns == b.iteration_times_ns and a.total_ns == b.total_ns
    g.select(kind="kernel").scale(0.5)
    c = g.simulate()
    assert all(x < y for x, y in zip(c.iteration_times_ns, a.iteration_times_ns))
    assert c.measured_iteration_times_ns == a.measured_iteration_times_ns


def channel_graph(stream_trace):
    """Three transfers compete for one new channel: Z keeps it busy while X (after k1, recorded
    earlier) and Y (after k2, ready earlier once k1 is 4x longer) wait. Y gates 'after_sync'."""
    g = daydream.load(stream_trace)
    (k0,) = g.select(name="k0_setup")
    (k1,) = g.select(name="k1_conv")
    (k2,) = g.select(name="k2_gemm")
    (after_sync,) = g.select(name="after_sync")
    z = g.insert("Z_busy", 1_000_000, "nccl", after=[k0])
    x = g.insert("X_long", 500_000, "nccl", after=[k1])
    y = g.insert("Y_short", 10_000, "nccl", after=[k2], before=[after_sync])
    k1.duration_ns *= 4  # after the inserts: their trace-order keys come from recorded ends
    assert x.recorded_start_ns < y.recorded_start_ns  # trace order prefers X
    return g, z, x, y


def test_schedule_policies_change_the_prediction(stream_trace):
    g, z, x, y = channel_graph(stream_trace)
    trace_order = g.simulate()
    assert g.simulate("trace_order").iteration_times_ns == trace_order.iteration_times_ns
    assert trace_order.start_ns(x) == trace_order.end_ns(z)  # X first
    assert trace_order.start_ns(y) == trace_order.end_ns(x)

    fifo = g.simulate("fifo")
    assert fifo.schedule == "fifo"
    assert fifo.start_ns(y) == fifo.end_ns(z)  # Y was ready first
    assert fifo.iteration_times_ns[0] == trace_order.iteration_times_ns[0] - 500_000

    by_dict = g.simulate({y: -1})  # only Y given: the others keep trace order
    assert by_dict.schedule == "dict"
    assert by_dict.iteration_times_ns == fifo.iteration_times_ns
    assert g.simulate({y.id: 1e18, x.id: 0}).iteration_times_ns == trace_order.iteration_times_ns

    shortest_first = g.simulate(lambda t: t.duration_ns if t.unit == "nccl" else None)
    assert shortest_first.schedule == "callable"
    assert shortest_first.iteration_times_ns == fifo.iteration_times_ns
    assert g.simulate(lambda t: None).iteration_times_ns == trace_order.iteration_times_ns
    assert g.simulate(lambda t: -t.duration_ns).total_ns >= fifo.total_ns


def test_schedule_errors(stream_trace):
    g, z, x, y = channel_graph(stream_trace)
    with pytest.raises(ValueError, match="schedule"):
        g.simulate("lifo")
    with pytest.raises(TypeError):
        g.simulate(42)
    with pytest.raises(ValueError, match="NaN"):
        g.simulate({x: float("nan")})
    with pytest.raises(TypeError):
        g.simulate({x: "high"})
    with pytest.raises(IndexError):
        g.simulate({10_000: 1})
    with pytest.raises(ValueError, match="another graph"):
        g.simulate({g.copy().task(x.id): 1})
    with pytest.raises(KeyError):
        g.simulate(lambda t: {}["missing"])


def test_result_times_and_removed_tasks(small_trace):
    g = daydream.load(small_trace)
    (memcpy,) = g.select(kind="memcpy")
    g.remove(memcpy)
    r = g.simulate()
    assert r.start_ns(memcpy) is None and r.end_ns(memcpy.id) is None
    (conv,) = g.select(name="convolve")
    assert r.end_ns(conv) - r.start_ns(conv) == conv.duration_ns
    late = g.insert("late", 10, "nccl", after=[conv])
    with pytest.raises(IndexError, match="after this simulation"):
        r.start_ns(late)


def test_replay_matches_the_cli(example_trace, cli):
    g = daydream.load(example_trace)
    report = g.replay()
    assert set(report) >= {"trace", "iterations", "span", "simulated_makespan_ms", "units", "critical_path"}
    assert [it["name"] for it in report["iterations"]] == g.iterations
    out = subprocess.run([cli, "replay", "--json", str(example_trace)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == report


def test_replay_dict(small_trace):
    g = daydream.load(small_trace)
    report = g.replay()
    r = g.simulate()
    assert [it["simulated_ms"] for it in report["iterations"]] == pytest.approx(r.iteration_times_ms, abs=1e-6)
    assert report["simulated_makespan_ms"] == pytest.approx(r.total_ms)
    assert {u["name"] for u in report["units"]} == set(g.units)
    assert g.replay("fifo")["iterations"]


def test_simulate_in_threads_concurrently(example_trace):
    g = daydream.load(example_trace)
    faster = g.copy()
    faster.select(kind="kernel").scale(0.5)
    expected = {id(g): g.simulate().iteration_times_ns, id(faster): faster.simulate().iteration_times_ns}
    got, errors = [], []

    def work(graph):
        try:
            for _ in range(20):
                got.append((id(graph), graph.simulate("fifo" if len(got) % 2 else None).iteration_times_ns))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(graph,)) for graph in (g, faster, g, faster)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(got) == 80
    assert all(times == expected[key] for key, times in got)


def test_simulate_releases_the_gil(example_trace):
    """With a huge switch interval the main thread can only run while the worker is inside a
    call that released the GIL: its counter moves only if simulate() releases it."""
    g = daydream.load(example_trace)
    assert releases_gil(g.simulate, tries=200), "the counter never moved while simulate() ran: the GIL was held"


def test_changes_wait_for_running_simulations(example_trace):
    """A change made while another thread simulates the same graph waits for it: no torn state."""
    g = daydream.load(example_trace)
    baseline = g.simulate().total_ns
    results = []

    def simulate_many():
        for _ in range(30):
            results.append(g.simulate().total_ns)

    thread = threading.Thread(target=simulate_many)
    thread.start()
    kernels = g.select(kind="kernel")
    for _ in range(30):
        kernels.scale(2)
        kernels.scale(0.5)
    thread.join()
    assert len(results) == 30
    assert g.simulate().total_ns == baseline


def test_driver_lock_is_mutual_exclusion_not_an_order(tmp_path):
    """Thread 2 prepares for 10 us, then holds the driver in a 190 us pageable copy call; thread
    1's device-to-device copy call blocks on it and returns 5 us after (docs/simulator.md, "The CUDA
    driver lock"). Make thread 2 prepare for 30 us and thread 1 gets the driver first."""
    from kineto_builder import KinetoJson
    t = KinetoJson()
    t.cpu_op("prepare", 0, 10, tid=2)
    t.runtime("cudaMemcpyAsync", 10, 190, 1, tid=2).memcpy("Memcpy HtoD (Pageable -> Device)", 199, 2, 1, stream=20)
    t.runtime("cudaLaunchKernel", 2, 2, 4).kernel("k0", 5, 1, 4)
    t.runtime("cudaLaunchKernel", 6, 2, 5).kernel("k1", 9, 1, 5)
    t.runtime("cudaLaunchKernel", 10, 2, 2).kernel("k", 14, 20, 2)
    t.runtime("cudaMemcpyAsync", 20, 185, 3).memcpy("Memcpy DtoD (Device -> Device)", 206, 30, 3)
    g = daydream.load(str(t.write(tmp_path / "lock.json")))
    holder, blocked = [c for c in g.select(name="^cudaMemcpyAsync$")]
    assert blocked.lock_held_by == holder and holder.lock_held_by is None
    r = g.simulate()
    assert r.end_ns(blocked) == 205_000 and r.lock_waits == 1 and r.lock_wait_ms == pytest.approx(0.18)
    next(iter(g.select(name="^prepare$"))).duration_ns = 30_000
    r = g.simulate()
    assert r.end_ns(blocked) == 25_000 and r.lock_waits == 0


def test_gpu_occupancy_holds_move_with_the_filling_kernel(tmp_path):
    """A kernel launched onto an idle stream while a 10-wave kernel fills the GPU gets in 880 us
    into it (docs/simulator.md, "GPU occupancy"); halve that kernel and it gets in at 440 us."""
    from kineto_builder import V100_PROPERTIES, KinetoJson
    t = KinetoJson(device=V100_PROPERTIES)
    t.cpu_op("prep", 0, 100)
    t.runtime("cudaLaunchKernel", 0, 2, 1).kernel("warmup", 10, 5, 1, stream=7, grid=4)
    t.runtime("cudaLaunchKernel", 100, 5, 2).kernel("big", 110, 1000, 2, stream=7, grid=6400, block=256)
    t.cpu_op("work", 105, 200)
    t.runtime("cudaLaunchKernel", 200, 5, 3).kernel("side", 990, 20, 3, stream=20, grid=4)
    g = daydream.load(str(t.write(tmp_path / "held.json")))
    big, side = next(iter(g.select(name="^big$"))), next(iter(g.select(name="^side$")))
    assert side.held_by == big and big.held_by is None
    r = g.simulate()
    assert r.start_ns(side) == 990_000 and r.occupancy_holds == 1 and r.occupancy_hold_ms == pytest.approx(0.78)
    assert not r.static_order  # which of two streams starts first is the event engine's to decide
    assert g.replay()["occupancy"] == {"held_tasks": 1, "held_ms": 0.78}
    g.select(name="^big$").scale(0.5)
    assert g.simulate().start_ns(side) == 550_000


def test_a_trace_without_holds_runs_in_static_order(tmp_path):
    """Threads and streams are chains: the one-pass simulation runs and gives the engine's times."""
    from kineto_builder import KinetoJson
    t = KinetoJson()
    t.cpu_op("prep", 0, 100)
    t.runtime("cudaLaunchKernel", 100, 5, 1).kernel("k", 110, 50, 1, stream=7)
    g = daydream.load(str(t.write(tmp_path / "plain.json")))
    r = g.simulate()
    k = next(iter(g.select(name="^k$")))
    assert r.static_order and r.start_ns(k) == 110_000 and r.end_ns(k) == 160_000
