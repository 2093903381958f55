"""The API on a real recorded trace (ResNet-50 on a V100, data loading in the main process)."""

import threading

import pytest

import daydream


@pytest.fixture(scope="module")
def graph(real_trace):
    return daydream.load(real_trace)


def test_replay_is_close_to_measured(graph):
    r = graph.simulate()
    assert r.iteration_names == [f"ProfilerStep#{i}" for i in range(5, 11)]
    for sim, measured in zip(r.iteration_times_ms, r.measured_iteration_times_ms):
        assert sim == pytest.approx(measured, rel=2.5e-3)
    assert len(r.critical_path) > 10


def test_selection_and_what_if(graph):
    kernels = graph.select(kind="kernel")
    assert len(kernels) > 1000
    convs = graph.select(kind="kernel", name="[Cc]onv|gemm")
    assert 0 < len(convs) < len(kernels)
    amp = graph.copy()
    amp.select(kind="kernel", name="[Cc]onv|gemm").scale(1 / 3)
    amp.select(kind="kernel", name_not="[Cc]onv|gemm").scale(1 / 2)
    assert amp.select(kind="kernel").total_duration_ns < kernels.total_duration_ns / 2
    before, after = graph.simulate(), amp.simulate()
    assert after.total_ns < before.total_ns
    assert all(a <= b for a, b in zip(after.iteration_times_ns, before.iteration_times_ns))
    assert graph.select(kind="kernel").total_duration_ns == kernels.total_duration_ns  # original untouched


def test_remove_data_loading(graph):
    g = graph.copy()
    loading = g.select(kind="cpu", name="DataLoader|dataloader|enumerate")
    if not len(loading):
        pytest.skip("no data-loading ranges in this trace")
    loading.set_duration(0)
    assert g.simulate().total_ns < graph.simulate().total_ns


def test_frames_and_threads(graph):
    pd = pytest.importorskip("pandas")
    df = graph.simulate().to_pandas()
    assert len(df) == len(graph)
    assert isinstance(df, pd.DataFrame)
    expected = graph.simulate("fifo").iteration_times_ns
    out = []
    threads = [threading.Thread(target=lambda: out.append(graph.simulate("fifo").iteration_times_ns)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [expected] * 4
