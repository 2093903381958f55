"""daydream.sweep(..., executor=...): specs spread over concurrent.futures-style executors (thread
and process pools, Dask, Ray) give the same DataFrame as a local sweep; Graph.fingerprint(),
Graph.sources and Graph.layer_file, which let a worker rebuild the caller's graph and check it.
"""

import concurrent.futures
import json
import multiprocessing
import pickle

import pandas as pd
import pytest

import daydream
from daydream import _sweep
from conftest import one_kernel_trace

# Grids, a spec that fails on every graph (an error row) and a callable (run by the caller).
SPECS = ["faster_gpu:factor=1.5|2|4", "amp", "dataloader_workers:workers=1|4", "faster_gpu:kind=tpu",
         ("half the kernels", lambda copy: copy.select(kind="kernel").scale(0.5))]


@pytest.fixture(scope="module")
def example(example_trace):
    """The bundled example graph and its local sweep, the reference every executor must match."""
    graph = daydream.load(example_trace)
    expected = daydream.sweep(graph, SPECS)
    assert expected["error"].notna().tolist() == [False] * 6 + [True, False]
    return graph, expected


class InOrderExecutor:
    """An executor whose futures are not concurrent.futures.Future: sweep must wait in order."""

    class Done:
        def __init__(self, value):
            self.value = value

        def result(self):
            return self.value

        def cancel(self):
            return False

    def __init__(self):
        self.submitted = []

    def submit(self, fn, *args):
        self.submitted.append(args)
        return self.Done(fn(*args))


# --- fingerprint, sources, layer_file ---

def test_fingerprint_is_equal_for_two_loads_and_changes_with_the_graph(tmp_path):
    path = one_kernel_trace().write(tmp_path / "one_kernel.json")
    first, second = daydream.load(path), daydream.load(path)
    assert isinstance(first.fingerprint(), int) and 0 <= first.fingerprint() < 2**64
    assert first.fingerprint() == second.fingerprint() == first._loaded_fingerprint
    second.select(kind="kernel").scale(0.5)
    assert second.fingerprint() != first.fingerprint()
    assert second._loaded_fingerprint == first.fingerprint()  # recorded at load, not updated
    other = daydream.load(one_kernel_trace(kernel_us=101).write(tmp_path / "longer.json"))
    assert other.fingerprint() != first.fingerprint()


def test_fingerprint_sees_edges_and_removals(tmp_path):
    base = daydream.load(one_kernel_trace().write(tmp_path / "one_kernel.json"))
    removed, inserted = base.copy(), base.copy()
    removed.remove(removed.select(name="after_sync").ids[0])
    inserted.insert("allreduce", 10, "comm", after=[inserted.select(kind="kernel").ids[0]])
    prints = {base.fingerprint(), removed.fingerprint(), inserted.fingerprint()}
    assert len(prints) == 3


def test_sources_and_layer_file(tmp_path, monkeypatch):
    one_kernel_trace().write(tmp_path / "one_kernel.json")
    layer_file = tmp_path / "layers.json"
    layer_file.write_text(json.dumps({"layers": [
        {"name": "mm", "phase": "forward", "start_us": 10, "end_us": 30, "thread": 1}]}))
    monkeypatch.chdir(tmp_path)  # relative paths are recorded absolute, for workers elsewhere
    plain, layered = daydream.load("one_kernel.json"), daydream.load("one_kernel.json", layers="layers.json")
    assert plain.sources == (str(tmp_path / "one_kernel.json"),) and plain.layer_file is None
    assert layered.sources == plain.sources and layered.layer_file == str(layer_file)
    assert layered.fingerprint() != plain.fingerprint()  # layers and phases are part of it


def test_copies_keep_sources_and_predictions_have_none(tmp_path):
    import copy

    g = daydream.load(one_kernel_trace().write(tmp_path / "one_kernel.json"))
    for duplicate in (g.copy(), copy.copy(g), copy.deepcopy(g)):
        assert duplicate.sources == g.sources and duplicate.layer_file == g.layer_file
        assert duplicate.fingerprint() == g.fingerprint() == duplicate._loaded_fingerprint
    changed = daydream.predict(g, "faster_gpu").graph
    assert changed.sources == () and changed._loaded_fingerprint is None


def test_graph_stub_lists_the_new_members():
    from pathlib import Path

    stub = (Path(daydream.__file__).parent / "_core.pyi").read_text()
    for name in ("fingerprint", "sources", "layer_file"):
        assert f"def {name}(" in stub
        member = vars(daydream.Graph)[name]
        assert (member.fget.__doc__ if isinstance(member, property) else member.__doc__).strip()
    assert "executor" in daydream.sweep.__doc__


# --- executors give the local sweep's rows ---

def test_thread_pool_gives_the_local_rows(example):
    graph, expected = example
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        pd.testing.assert_frame_equal(daydream.sweep(graph, SPECS, executor=pool), expected)


def test_process_pool_gives_the_local_rows(example):
    graph, expected = example
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:  # the platform's default start
        pd.testing.assert_frame_equal(daydream.sweep(graph, SPECS, executor=pool), expected)


def test_spawned_process_pool_gives_the_local_rows(example):
    """Spawned workers import daydream afresh: nothing but the task's arguments reaches them."""
    graph, expected = example
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        pd.testing.assert_frame_equal(daydream.sweep(graph, SPECS, executor=pool), expected)


def test_layer_file_reaches_the_workers(tmp_path):
    path = one_kernel_trace().write(tmp_path / "one_kernel.json")
    layer_file = tmp_path / "layers.json"
    layer_file.write_text(json.dumps({"layers": [
        {"name": "mm", "phase": "forward", "start_us": 10, "end_us": 30, "thread": 1}]}))
    g = daydream.load(path, layers=layer_file)
    specs = ["faster_gpu:factor=2|4"]
    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as pool:
        pd.testing.assert_frame_equal(daydream.sweep(g, specs, executor=pool), daydream.sweep(g, specs))


def test_progress_counts_every_row(example):
    graph, expected = example
    seen = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        daydream.sweep(graph, SPECS, executor=pool, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(done, len(expected)) for done in range(1, len(expected) + 1)]


def test_futures_of_another_kind_are_waited_for_in_order(example):
    graph, expected = example
    executor, seen = InOrderExecutor(), []
    frame = daydream.sweep(graph, SPECS, executor=executor, progress=lambda done, total: seen.append(done))
    pd.testing.assert_frame_equal(frame, expected)
    assert seen == list(range(1, len(expected) + 1))
    assert len(executor.submitted) == len(expected) - 1  # the callable ran here
    sources, layers, iterations, fingerprint, spec = executor.submitted[0]
    assert (sources, layers, iterations, fingerprint, spec) == (graph.sources, None, None, graph.fingerprint(),
                                                                "faster_gpu:factor=1.5")


def test_worker_rows_are_plain_picklable_values(example):
    graph, _ = example
    row = _sweep._predict_in_worker(graph.sources, None, None, graph.fingerprint(), "faster_gpu:kind=tpu")
    assert all(value is None or type(value) in (float, str, int) for value in row.values())
    assert repr(pickle.loads(pickle.dumps(row))) == repr(row)  # NaN != NaN: compare the text
    assert set(row) == {"baseline_ms", "predicted_ms", "speedup", "dominant", "dominant_share", "error",
                        "gpu", "gpu_memory_bytes", "gpus"}  # the last three for price=
    assert "'tpu'" in row["error"] and row["dominant"] is None and isinstance(row["baseline_ms"], float)


# --- refusals ---

def test_changed_graph_is_refused_before_anything_is_submitted(example):
    graph, _ = example
    changed = graph.copy()
    changed.select(kind="kernel").scale(0.5)
    executor = InOrderExecutor()
    with pytest.raises(ValueError, match="changed after it was loaded from .*synthetic_training"):
        daydream.sweep(changed, ["faster_gpu"], executor=executor)
    assert executor.submitted == []


def test_graph_without_sources_is_refused(example):
    graph, _ = example
    unsourced = daydream.predict(graph, "faster_gpu").graph
    with pytest.raises(ValueError, match="made by daydream.load"):
        daydream.sweep(unsourced, ["amp"], executor=InOrderExecutor())


def test_threads_and_executor_together_are_refused(example):
    graph, _ = example
    with pytest.raises(ValueError, match="threads= or executor="):
        daydream.sweep(graph, ["amp"], threads=2, executor=InOrderExecutor())
    with pytest.raises(TypeError, match="submit"):
        daydream.sweep(graph, ["amp"], executor=object())


def test_worker_refuses_a_graph_that_is_not_the_callers(example):
    graph, _ = example
    with pytest.raises(daydream.Error, match="is not the caller's"):
        _sweep._predict_in_worker(graph.sources, None, None, graph.fingerprint() ^ 1, "amp")


def test_worker_error_reaches_the_caller_through_a_process_pool(example):
    graph, _ = example
    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as pool:
        future = pool.submit(_sweep._predict_in_worker, graph.sources, None, None, graph.fingerprint() ^ 1, "amp")
        with pytest.raises(daydream.Error, match="is not the caller's"):
            future.result()


def test_worker_reloads_files_rewritten_since_it_cached_them(tmp_path):
    path = tmp_path / "one_kernel.json"
    one_kernel_trace().write(path)
    before = daydream.load(path)
    _sweep._predict_in_worker(before.sources, None, None, before.fingerprint(), "faster_gpu")  # now cached
    one_kernel_trace(kernel_us=90).write(path)
    after = daydream.load(path)
    row = _sweep._predict_in_worker(after.sources, None, None, after.fingerprint(), "faster_gpu")
    assert row["baseline_ms"] == daydream.predict(after, "faster_gpu").baseline_ms


# --- cluster executors (optional packages) ---

def test_dask_executor_gives_the_local_rows(example):
    distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed "
                                      "(python3 -m pip install distributed) - Dask executor not tested")
    graph, expected = example
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        with client.get_executor() as executor:
            pd.testing.assert_frame_equal(daydream.sweep(graph, SPECS, executor=executor), expected)


class RayObjectRefExecutor:
    """concurrent.futures-style submit over Ray tasks (Ray has no such executor in every release):
    ObjectRef.future() is a concurrent.futures.Future."""

    def __init__(self, ray):
        self._ray = ray

    def submit(self, fn, *args):
        return self._ray.remote(fn).remote(*args).future()


def test_ray_executor_gives_the_local_rows(example):
    ray = pytest.importorskip("ray", reason="Ray is not installed (python3 -m pip install ray) - "
                              "Ray executor not tested")
    graph, expected = example
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # workers inherit PYTHONPATH
    try:
        frame = daydream.sweep(graph, SPECS, executor=RayObjectRefExecutor(ray))
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(frame, expected)
