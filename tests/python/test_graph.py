"""daydream.load, Graph reading, Task attributes, Graph.select filters."""

import gc
import json

import pytest

import daydream
from kineto_builder import KinetoJson


def test_load_example(example_trace):
    g = daydream.load(example_trace)
    assert isinstance(g, daydream.Graph)
    assert len(g) == g.num_tasks > 1000
    assert g.iterations == [f"ProfilerStep#{i}" for i in range(1, 5)]
    assert "GPU 0 stream 7" in g.units
    assert g.source_path.endswith("synthetic_training.json.gz")
    counts = g.edge_counts()
    assert set(counts) == set(daydream.EDGE_TYPES)
    assert counts["launch"] > 0 and counts["cpu_sequential"] > 0
    assert sum(g.task_counts().values()) == len(g)
    assert "tasks" in repr(g)


def test_load_accepts_str_and_pathlike(small_trace):
    assert len(daydream.load(str(small_trace))) == len(daydream.load(small_trace))


def test_load_legacy_and_gzip(tmp_path):
    t = KinetoJson(legacy=True)
    t.annotation("ProfilerStep#3", 0, 100)
    t.launch("sgemm", 10, 1, kernel_ts=20, kernel_dur=30)
    g = daydream.load(t.write(tmp_path / "legacy.json.gz"))
    assert g.iterations == ["ProfilerStep#3"]
    assert [k.name for k in g.select(kind="kernel")] == ["sgemm"]


def test_load_errors_are_daydream_errors(tmp_path):
    with pytest.raises(daydream.Error, match="missing.json"):
        daydream.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": -5, "args": {"stream": 7, "correlation": 1}}]}')
    with pytest.raises(daydream.Error) as info:
        daydream.load(bad)
    assert isinstance(info.value, RuntimeError)
    assert "bad.json" in str(info.value)


def test_error_message_is_the_cli_message(tmp_path, cli):
    import subprocess

    truncated = tmp_path / "t.json"
    truncated.write_text('{"traceEvents": [')
    with pytest.raises(daydream.Error) as info:
        daydream.load(truncated)
    run = subprocess.run([cli, "replay", str(truncated)], capture_output=True, text=True)
    assert run.returncode == 1
    assert str(info.value) in run.stderr and not run.stdout  # "error: <message>" on stderr only


def test_task_attributes(small_trace):
    g = daydream.load(small_trace)
    conv = g.select(kind="kernel", name="convolve")
    assert len(conv) == 1
    (k,) = conv
    assert k.name == "implicit_convolve_sgemm"
    assert k.kind == "kernel"
    assert k.unit == "GPU 0 stream 7"
    assert k.duration_ns == 200_000
    assert k.recorded_start_ns == 35_000
    assert k.iteration == 0
    assert k.op == "aten::conv2d"
    assert k.phase in daydream.PHASES
    assert k.layer is None
    assert k.removed is False
    assert k.graph is g or len(k.graph) == len(g)
    launch = k.predecessors
    assert [t.name for t in launch] == ["cudaLaunchKernel"]
    assert all(isinstance(t, daydream.Task) for t in k.successors)
    assert k in launch[0].successors
    assert g.task(k.id) == k and hash(g.task(k.id)) == hash(k)
    assert g.task(k.id) != g.copy().task(k.id)  # same id, other graph
    assert "implicit_convolve_sgemm" in repr(k)
    with pytest.raises(IndexError):
        g.task(10_000)


def test_task_duration_is_settable_and_validated(small_trace):
    g = daydream.load(small_trace)
    (k,) = g.select(name="volta_sgemm")
    k.duration_ns = 1234
    assert g.task(k.id).duration_ns == 1234
    k.duration_ns = 2e3  # a whole float is fine
    assert k.duration_ns == 2000
    k.duration_ns /= 3  # a fraction rounds to the nearest ns, as scale(1 / 3) does
    assert k.duration_ns == 667
    k.duration_ns = 2.5
    assert k.duration_ns == 3  # half away from zero, as scale
    copy = g.copy()
    (same,) = copy.select(name="volta_sgemm")
    same.duration_ns = 2000
    copy.select(name="volta_sgemm").scale(1 / 3)
    assert same.duration_ns == 667
    for bad in (-1, -0.4, float("nan"), float("inf"), -float("inf"), 1e19):
        with pytest.raises(ValueError):
            k.duration_ns = bad
    with pytest.raises(TypeError):
        k.duration_ns = "10"
    assert k.duration_ns == 3


def test_task_keeps_graph_alive(small_trace):
    kernels = list(daydream.load(small_trace).select(kind="kernel"))
    gc.collect()
    assert [k.name for k in kernels][0] == "implicit_convolve_sgemm"
    assert kernels[0].unit == "GPU 0 stream 7"
    assert len(kernels[0].graph) == 31


def test_select_filters(small_trace):
    g = daydream.load(small_trace)
    assert len(g.select()) == len(g)
    kinds = g.task_counts()
    assert len(g.select(kind="kernel")) == kinds["kernel"] == 3
    assert len(g.select(kind=["kernel", "memcpy"])) == 4
    assert len(g.select(kind="communication")) == 0
    assert [t.name for t in g.select(name="sgemm")] == ["implicit_convolve_sgemm", "volta_sgemm_128x64_nn"]
    assert [t.name for t in g.select(kind="kernel", name_not="sgemm")] == ["vectorized_elementwise_kernel<relu>"]
    assert g.select(name="(?i)SGEMM").ids == g.select(name="sgemm").ids  # (?i) ignores case, as in re
    assert len(g.select(name="SGEMM")) == 0
    assert len(g.select(name="^cuda")) == len(g.select(kind="runtime"))
    assert [t.name for t in g.select(kind="kernel", iteration=1)] == ["volta_sgemm_128x64_nn"]
    assert len(g.select(kind="kernel", iteration=[0, 1])) == 3
    stream = g.units.index("GPU 0 stream 7")
    assert g.select(unit="GPU 0 stream 7").ids == g.select(unit=stream).ids == g.select(kind=["kernel", "memcpy"]).ids
    assert len(g.select(unit_kind="gpu_stream")) == 4
    assert [t.name for t in g.select(kind="kernel", op="conv")] == ["implicit_convolve_sgemm"]
    assert len(g.select(phase="unknown")) + len(g.select(phase=["forward", "backward", "update", "data_loading"])) == len(g)
    assert len(g.select(layer=".")) == 0  # no layer file applied
    assert len(g.select(kind=None)) == len(g)  # None: no filter


def test_select_pred_runs_after_filters(small_trace):
    g = daydream.load(small_trace)
    seen = []

    def pred(task):
        seen.append(task.kind)
        return task.duration_ns > 120_000

    long_kernels = g.select(pred, kind="kernel")
    assert [t.name for t in long_kernels] == ["implicit_convolve_sgemm", "volta_sgemm_128x64_nn"]
    assert seen == ["kernel"] * 3
    assert len(g.select(pred=lambda t: t.name.startswith("aten::"))) > 0
    f = g.select(kind="kernel").filter(lambda t: "relu" in t.name)
    assert [t.name for t in f] == ["vectorized_elementwise_kernel<relu>"]
    assert len(g.select(kind="kernel").filter(iteration=1)) == 1


def test_select_rejects_bad_filters(small_trace):
    g = daydream.load(small_trace)
    with pytest.raises(TypeError, match="colour"):
        g.select(colour="red")
    with pytest.raises(TypeError, match="kinds"):
        g.select(kinds="kernel")
    with pytest.raises(ValueError, match="gpu"):
        g.select(kind="gpu")
    with pytest.raises(ValueError, match="phase"):
        g.select(phase="warmup")
    with pytest.raises(ValueError, match="no unit"):
        g.select(unit="GPU 9 stream 1")
    with pytest.raises(ValueError, match="no unit"):
        g.select(unit=99)
    with pytest.raises(ValueError, match="regular expression"):
        g.select(name="(unclosed")
    with pytest.raises(TypeError):
        g.select(iteration="1")
    with pytest.raises(TypeError):
        g.select(pred=42)
    with pytest.raises(ZeroDivisionError):
        g.select(pred=lambda t: 1 / 0)


def test_layers(tmp_path):
    t = KinetoJson()
    t.annotation("ProfilerStep#1", 0, 200)
    t.cpu_op("aten::conv2d", 10, 30)
    t.launch("implicit_convolve_sgemm", 20, 1, kernel_ts=35, kernel_dur=50)
    t.cpu_op("aten::linear", 50, 30)
    t.launch("volta_sgemm", 60, 2, kernel_ts=90, kernel_dur=50)
    trace = t.write(tmp_path / "layers.json")
    layer_file = tmp_path / "layers_file.json"
    layer_file.write_text(json.dumps({"layers": [
        {"name": "features.conv1", "phase": "forward", "start_us": 10, "end_us": 40, "thread": 1},
        {"name": "classifier.fc", "phase": "forward", "start_us": 50, "end_us": 80, "thread": 1},
    ]}))
    g = daydream.load(trace, layers=layer_file)
    conv = g.select(kind="kernel", layer="conv")
    assert [k.name for k in conv] == ["implicit_convolve_sgemm"]
    assert [k.layer for k in g.select(kind="kernel")] == ["features.conv1", "classifier.fc"]
    assert len(g.select(phase="forward")) >= 4
    assert all(t.layer is None for t in daydream.load(trace).select())
    bad = tmp_path / "bad_layers.json"
    bad.write_text('{"layers": [{"name": "x"}]}')
    with pytest.raises(daydream.Error, match="bad_layers.json"):
        daydream.load(trace, layers=bad)


def test_import_report_is_what_stats_prints(cli, example_trace):
    import subprocess

    run = subprocess.run([cli, "stats", str(example_trace), "--json"], capture_output=True, text=True, check=True)
    assert daydream.load(example_trace).import_report() == json.loads(run.stdout)["import_report"]


def test_import_report_carries_kept_time(tmp_path):
    # Thread 1 idles 300 us with nothing on another thread to explain it: an unexplained gap.
    trace = tmp_path / "gap.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 310, "dur": 10},
    ]}))
    report = {s["key"]: s for s in daydream.load(trace).import_report()}
    assert report["unexplained_gaps"]["count"] == 1
    assert report["unexplained_gaps"]["total_ms"] == pytest.approx(0.3)
