"""The scenario library from Python: daydream.scenarios / describe / predict / apply_scenario /
sweep / write_timeline and daydream.plot, with exact numbers on tiny hand-built traces.

The one-kernel trace (times in us, one CPU thread, stream 7):
    ProfilerStep#1 0..200: aten::mm 10..30 (launch 15..20 of gemm_kernel, which runs 30..130),
    cudaDeviceSynchronize 40..135, after_sync 140..150.
Its replay is the recording: the kernel starts 10 us after its launch ends, the sync returns
5 us after the kernel ends, then PS#1 (5 us), after_sync (10 us) and the rest of PS#1 (50 us):
the iteration takes 200 us. Each us taken off the 100 us kernel comes off the iteration.
"""

import json
import math
import subprocess
import sys

import pandas as pd
import pytest

import daydream
from conftest import one_kernel_trace, releases_gil
from kineto_builder import KinetoJson

SWEEP_COLUMNS = ["scenario", "baseline_ms", "predicted_ms", "speedup", "dominant", "dominant_share", "error"]


def two_iteration_trace() -> KinetoJson:
    """The one-kernel step, then ProfilerStep#2 200..300 with CPU work only (aten::add_ 210..260)."""
    t = one_kernel_trace()
    t.annotation("ProfilerStep#2", 200, 100)
    t.cpu_op("aten::add_", 210, 50)
    return t


@pytest.fixture
def one_kernel(tmp_path):
    path = one_kernel_trace().write(tmp_path / "one_kernel.json")
    return path, daydream.load(path)


@pytest.fixture
def two_iterations(tmp_path):
    return daydream.load(two_iteration_trace().write(tmp_path / "two_iterations.json"))


# --- the package ---

def test_exports_docstrings_and_stub():
    from pathlib import Path

    from daydream import _core

    for name in ("Prediction", "scenarios", "describe", "predict", "apply_scenario", "write_timeline", "sweep"):
        assert name in daydream.__all__
    for name in ("Prediction", "scenarios", "describe", "predict", "apply_scenario", "write_timeline"):
        assert getattr(daydream, name) is getattr(_core, name)
    assert daydream.sweep.__module__ == "daydream._sweep" and "threads" in daydream.sweep.__doc__
    stub = (Path(daydream.__file__).parent / "_core.pyi").read_text()
    for name in ("scenarios", "describe", "predict", "apply_scenario", "write_timeline"):
        assert getattr(_core, name).__doc__ and f"def {name}(" in stub
    assert "class Prediction" in stub
    for name, member in vars(daydream.Prediction).items():
        if name.startswith("_") and name != "__repr__":
            continue
        doc = member.fget.__doc__ if isinstance(member, property) else member.__doc__
        assert doc and doc.strip(), f"Prediction.{name} has no docstring"
        if name != "__repr__":
            assert f"def {name}(" in stub, f"Prediction.{name} missing from _core.pyi"


# --- the registry ---

def test_scenarios_lists_every_builtin_with_its_parameters():
    listed = daydream.scenarios()
    names = [s["name"] for s in listed]
    assert names == sorted(names)
    assert {"amp", "faster_gpu", "faster_network", "channels_last", "pinned_memory", "fused_adam", "restructure_bn",
            "cuda_graphs", "ddp", "p3", "dataloader_workers"} <= set(names)
    for scenario in listed:
        assert set(scenario) == {"name", "summary", "params", "help"} and scenario["summary"]
        assert scenario["help"] == daydream.describe(scenario["name"])
        for param in scenario["params"]:
            assert set(param) == {"name", "kind", "default", "min", "max", "min_exclusive", "unit", "description", "auto"}
            assert (param["default"] == "auto") == (param["auto"] is not None)
            assert param["kind"] in ("number", "integer", "bandwidth", "bytes", "duration", "text")


def test_scenarios_is_the_cli_catalogue(cli):
    """One catalogue: daydream.scenarios() is `daydream scenarios --json`'s list, value for value
    (an auto parameter's default is "auto" in both, never a placeholder number)."""
    printed = json.loads(subprocess.run([cli, "scenarios", "--json"], check=True, capture_output=True,
                                        text=True).stdout)["scenarios"]
    assert daydream.scenarios() == printed
    rank = {p["name"]: p for s in printed if s["name"] == "rank_speed" for p in s["params"]}["rank"]
    assert rank["default"] == "auto" and rank["min"] == 0


def test_scenario_parameters_in_canonical_units():
    params = {s["name"]: {p["name"]: p for p in s["params"]} for s in daydream.scenarios()}
    factor = params["faster_gpu"]["factor"]
    assert (factor["kind"], factor["default"], factor["min"], factor["max"], factor["min_exclusive"], factor["unit"]) == \
        ("number", 2.0, 0.0, None, True, "")
    assert params["faster_gpu"]["kind"]["default"] == "kernel"  # a text parameter's default is its text
    assert params["faster_network"]["bandwidth"]["unit"] == "bytes/s"
    workers = params["dataloader_workers"]["workers"]
    assert workers["kind"] == "integer" and isinstance(workers["default"], int)
    assert params["dataloader_workers"]["fetch"]["unit"] == "ns"


def test_auto_parameters_say_what_they_use_and_accept_auto():
    params = {s["name"]: {p["name"]: p for p in s["params"]} for s in daydream.scenarios()}
    assert params["rank_speed"]["rank"]["default"] == "auto" and "straggler" in params["rank_speed"]["rank"]["auto"]
    assert params["scale_out"]["gpus_per_machine"]["auto"] == "the traced world size"
    assert params["network"]["latency"]["auto"] == params["network"]["bandwidth"]["auto"] == "fitted to the job's collectives"
    assert params["faster_gpu"]["factor"]["auto"] is None
    # Not one auto parameter also states a fixed default in its description.
    for scenario in params.values():
        for p in scenario.values():
            assert "(default" not in p["description"], p
    assert "default auto: the straggler" in daydream.describe("rank_speed")


def test_auto_as_a_value_is_the_same_as_not_giving_it(one_kernel):
    _, graph = one_kernel
    plain = daydream.predict(graph, "faster_network:factor=2")
    auto = daydream.predict(graph, "faster_network:factor=2,bandwidth=auto")
    assert auto.predicted_ns == plain.predicted_ns
    with pytest.raises(daydream.Error, match="'factor' = 'auto' is not a valid number"):
        daydream.predict(graph, "faster_gpu:factor=auto")  # factor has a fixed default: no auto


def test_describe():
    text = daydream.describe("faster_gpu")
    assert text.startswith("faster_gpu: ") and "factor (number, > 0; default 2)" in text
    with pytest.raises(daydream.Error, match=r"unknown scenario 'warp_drive' \(valid: amp, .*faster_gpu"):
        daydream.describe("warp_drive")


# --- predict ---

def test_predict_faster_gpu_on_one_kernel(one_kernel):
    path, g = one_kernel
    p = daydream.predict(g, "faster_gpu:factor=2")
    assert isinstance(p, daydream.Prediction)
    assert p.scenario == "faster_gpu:factor=2"
    # The kernel takes 50 us instead of 100: the iteration 200 -> 150 us.
    assert (p.baseline_ns, p.predicted_ns) == (200_000, 150_000)
    assert (p.baseline_ms, p.predicted_ms) == (0.2, 0.15)
    assert (p.total_baseline_ms, p.total_predicted_ms) == (0.2, 0.15)
    assert p.speedup == 200_000 / 150_000
    assert p.iterations.to_dict("list") == {"name": ["ProfilerStep#1"], "measured_ms": [0.2], "baseline_ms": [0.2],
                                            "predicted_ms": [0.15], "speedup": [200 / 150]}
    assert len(p.notes) == 1 and isinstance(p.notes[0], str)


def test_predict_critical_path_breakdown(one_kernel):
    _, g = one_kernel
    path = daydream.predict(g, "faster_gpu:factor=2").critical_path
    # Predicted path 0..150 us: PS#1 10 + aten::mm 5 (cpu), launch 5, 10 us launch latency, the
    # kernel 50 (compute), the sync's 5 us after it, PS#1 5 + after_sync 10 + PS#1 50 (cpu).
    assert path == {
        "length_ms": 0.15,
        "dominant": "cpu",
        "by_category_ms": {"compute": 0.05, "cpu": 0.08, "launch_overhead": 0.005, "communication": 0.0,
                           "data_loading": 0.0, "synchronization": 0.005, "latency": 0.01},
        "by_layer_ms": [("(no layer)", 0.14)],  # every task's time, none has a layer
    }


def test_predict_keeps_the_graph_and_returns_both_runs(one_kernel):
    _, g = one_kernel
    p = daydream.predict(g, "faster_gpu:factor=4")
    (kernel,) = g.select(kind="kernel")
    assert kernel.duration_ns == 100_000  # predict changed a copy
    assert isinstance(p.graph, daydream.Graph) and p.graph is not g
    (changed,) = p.graph.select(kind="kernel")
    assert changed.duration_ns == 25_000
    assert isinstance(p.result, daydream.Result) and p.result.graph is p.graph
    assert (p.result.start_ns(changed), p.result.end_ns(changed)) == (30_000, 55_000)
    assert p.result.iteration_times_ns == [125_000]
    assert p.result.schedule == "faster_gpu:factor=4"
    assert p.baseline_result.iteration_times_ns == g.simulate().iteration_times_ns == [200_000]
    assert p.baseline_result.schedule == "trace_order"
    assert "faster_gpu:factor=4" in repr(p) and "0.200 ms -> 0.125 ms (1.600x)" in repr(p)


def test_predict_iterations_and_lower_median(two_iterations):
    p = daydream.predict(two_iterations, "faster_gpu")  # factor 2 by default
    frame = p.iterations
    assert list(frame.columns) == ["name", "measured_ms", "baseline_ms", "predicted_ms", "speedup"]
    assert frame["name"].tolist() == ["ProfilerStep#1", "ProfilerStep#2"]
    assert frame["baseline_ms"].tolist() == [0.2, 0.1]
    assert frame["predicted_ms"].tolist() == [0.15, 0.1]  # step 2 has no kernel
    assert frame["speedup"].tolist() == [200 / 150, 1.0]
    # Medians of two iterations are the lower one: 0.1 ms before and after.
    assert (p.baseline_ms, p.predicted_ms, p.speedup) == (0.1, 0.1, 1.0)
    assert (p.total_baseline_ms, p.total_predicted_ms) == (0.3, 0.25)


def test_to_dict_is_the_cli_json(one_kernel):
    path, g = one_kernel
    p = daydream.predict(g, "faster_gpu:factor=2")
    d = p.to_dict()
    assert list(d) == ["trace", "scenario", "iteration_rule", "iterations", "total", "median", "speedup", "critical_path",
                       "notes"]
    assert d["trace"] == g.source_path == str(path)
    assert d["scenario"] == "faster_gpu:factor=2"
    assert d["iterations"] == [{"name": "ProfilerStep#1", "baseline_ms": 0.2, "predicted_ms": 0.15, "measured_ms": 0.2}]
    assert d["total"] == {"baseline_ms": 0.2, "predicted_ms": 0.15}
    assert d["median"] == {"baseline_ms": 0.2, "predicted_ms": 0.15}
    assert d["speedup"] == pytest.approx(4 / 3, abs=1e-4)
    cp = d["critical_path"]
    assert cp["by_category_ms"] == p.critical_path["by_category_ms"] and cp["dominant"] == "cpu"
    assert cp["by_layer_ms"] == [{"layer": "(no layer)", "ms": 0.14}]
    assert d["notes"] == p.notes
    json.dumps(d)


def test_bad_specs_raise_the_library_message(one_kernel):
    _, g = one_kernel
    with pytest.raises(daydream.Error, match=r"unknown scenario 'fastr_gpu' \(valid: .*faster_gpu"):
        daydream.predict(g, "fastr_gpu")
    with pytest.raises(daydream.Error, match=r"scenario 'faster_gpu' has no parameter 'speed'; its parameters:\n  factor"):
        daydream.predict(g, "faster_gpu:speed=2")
    with pytest.raises(daydream.Error, match=r"parameter 'factor' = '0' is out of range \(valid: > 0\)"):
        daydream.predict(g, "faster_gpu:factor=0")
    with pytest.raises(daydream.Error, match=r"'factor' = 'fast' is not a valid number"):
        daydream.predict(g, "faster_gpu:factor=fast")
    with pytest.raises(daydream.Error, match="is not key=value"):
        daydream.predict(g, "faster_gpu:factor")
    with pytest.raises(daydream.Error, match=r"is a grid .*use daydream.sweep"):
        daydream.predict(g, "faster_gpu:factor=2|4")
    with pytest.raises(daydream.Error, match="faster_gpu.*'kind'.*'tpu'"):  # raised while applying
        daydream.predict(g, "faster_gpu:kind=tpu")
    with pytest.raises(TypeError):
        daydream.predict(g, 2)


# --- apply_scenario ---

def test_apply_scenario_changes_the_graph_in_place(one_kernel):
    _, g = one_kernel
    notes = daydream.apply_scenario(g, "faster_gpu:factor=4")
    assert isinstance(notes, list) and len(notes) == 1
    (kernel,) = g.select(kind="kernel")
    assert kernel.duration_ns == 25_000
    g.select(name="after_sync").scale(2)  # composed with a change of one's own: +10 us
    assert g.simulate().iteration_times_ns == [135_000]
    with pytest.raises(daydream.Error, match="unknown scenario"):
        daydream.apply_scenario(g, "nope")


# --- sweep ---

def test_sweep_rows_columns_and_values(one_kernel):
    _, g = one_kernel
    quarter = ("kernels / 4", lambda copy: copy.select(kind="kernel").scale(0.25))
    df = daydream.sweep(g, ["faster_gpu:factor=2|4", quarter, "faster_gpu"])
    assert list(df.columns) == SWEEP_COLUMNS + ["factor"]
    assert df["scenario"].tolist() == ["faster_gpu:factor=2", "faster_gpu:factor=4", "kernels / 4", "faster_gpu"]
    assert df["factor"].tolist()[:2] == [2.0, 4.0] and df["factor"].isna().tolist()[2:] == [True, True]  # not given: NaN
    assert df["baseline_ms"].tolist() == [0.2] * 4
    assert df["predicted_ms"].tolist() == [0.15, 0.125, 0.125, 0.15]
    assert df["speedup"].tolist() == [200 / 150, 200 / 125, 200 / 125, 200 / 150]
    assert df["dominant"].tolist() == ["cpu"] * 4
    assert df["dominant_share"].tolist() == [0.08 / 0.15, 0.08 / 0.125, 0.08 / 0.125, 0.08 / 0.15]
    assert df["error"].tolist() == [None] * 4
    # A callable doing what a scenario does gets the same row (Python and C++ compare alike).
    measures = SWEEP_COLUMNS[1:]
    assert df.loc[2, measures].tolist() == df.loc[1, measures].tolist()
    assert g.select(kind="kernel").total_duration_ns == 100_000  # every scenario ran on a copy


def test_sweep_grid_expands_first_key_slowest(one_kernel):
    _, g = one_kernel
    df = daydream.sweep(g, "faster_gpu:kind=kernel|all,factor=1|2")  # one spec alone is fine too
    assert df["scenario"].tolist() == ["faster_gpu:kind=kernel,factor=1", "faster_gpu:kind=kernel,factor=2",
                                       "faster_gpu:kind=all,factor=1", "faster_gpu:kind=all,factor=2"]
    assert df["kind"].tolist() == ["kernel", "kernel", "all", "all"]
    assert df["predicted_ms"].tolist() == [0.2, 0.15, 0.2, 0.15]


def test_sweep_no_op_callable_predicts_the_library_baseline(example_trace):
    """The callable path mirrors the library's comparison: an unchanged copy predicts exactly the
    baseline that the library computed for the spec rows."""
    g = daydream.load(example_trace)
    df = daydream.sweep(g, ["faster_gpu", ("unchanged", lambda copy: None)])
    assert df.loc[1, "predicted_ms"] == df.loc[0, "baseline_ms"] == df.loc[1, "baseline_ms"]
    assert df.loc[1, "speedup"] == 1.0
    assert df.loc[0, "baseline_ms"] == daydream.predict(g, "faster_gpu").baseline_ms


def test_sweep_does_not_depend_on_threads(example_trace):
    g = daydream.load(example_trace)
    specs = ["faster_gpu:factor=1.5|2|4", "amp", "dataloader_workers:workers=1|4", "faster_gpu:kind=tpu",
             ("half", lambda copy: copy.select(kind="kernel").scale(0.5))]
    one = daydream.sweep(g, specs, threads=1)
    two = daydream.sweep(g, specs, threads=2)
    pd.testing.assert_frame_equal(one, two)
    assert len(one) == 8 and one["error"].notna().tolist() == [False] * 6 + [True, False]
    assert list(one.columns) == SWEEP_COLUMNS + ["factor", "workers", "kind"]
    pd.testing.assert_frame_equal(daydream.sweep(g, specs), one)  # threads=None: every core


def test_sweep_failing_scenarios_become_error_rows(one_kernel):
    _, g = one_kernel

    def boom(copy):
        raise ValueError("boom")

    df = daydream.sweep(g, ["faster_gpu:kind=tpu", ("boom", boom), "faster_gpu"])
    assert df["error"].tolist()[1:] == ["ValueError: boom", None]
    assert "faster_gpu" in df.loc[0, "error"] and "'tpu'" in df.loc[0, "error"]
    assert df["baseline_ms"].tolist() == [0.2, 0.2, 0.2]  # known even where the scenario failed
    assert math.isnan(df.loc[0, "predicted_ms"]) and math.isnan(df.loc[1, "speedup"])
    assert df["dominant"].tolist() == [None, None, "cpu"]
    assert df.loc[2, "predicted_ms"] == 0.15


def test_sweep_bad_input_raises_before_any_work(one_kernel):
    _, g = one_kernel
    called = []
    spy = ("spy", lambda copy: called.append(copy))
    with pytest.raises(daydream.Error, match=r"unknown scenario 'nope' \(valid: .*faster_gpu"):
        daydream.sweep(g, [spy, "faster_gpu", "nope"])
    with pytest.raises(daydream.Error, match="has no parameter 'speed'"):
        daydream.sweep(g, [spy, "faster_gpu:speed=1|2"])
    with pytest.raises(daydream.Error, match="out of range"):
        daydream.sweep(g, [spy, "faster_gpu:factor=2|-1"])
    with pytest.raises(TypeError, match="a spec str or a \\(name, callable\\) pair"):
        daydream.sweep(g, [spy, ("name", "not callable")])
    with pytest.raises(ValueError, match="threads"):
        daydream.sweep(g, [spy], threads=0)
    assert called == []


def test_sweep_progress(one_kernel):
    _, g = one_kernel
    seen = []
    daydream.sweep(g, ["faster_gpu:factor=1|2|3", ("noop", lambda copy: None)], threads=2,
                   progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]

    def fail(done, total):
        raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        daydream.sweep(g, ["faster_gpu:factor=1|2"], progress=fail)


def test_sweep_progress_true_prints_to_stderr(one_kernel, capsys):
    _, g = one_kernel
    daydream.sweep(g, ["faster_gpu:factor=1|2"], progress=True)
    assert capsys.readouterr().err == "\rsweep: 1/2 predictions\rsweep: 2/2 predictions\n"


def test_sweep_releases_the_gil(example_trace):
    """Same probe as test_simulate_releases_the_gil: the main thread's counter moves only while
    the worker is inside a call that released the GIL."""
    g = daydream.load(example_trace)
    assert releases_gil(lambda: daydream.sweep(g, ["faster_gpu:factor=2|3|4"], threads=2), tries=50), (
        "the counter never moved while sweep() ran: the GIL was held")


# --- write_timeline ---

def test_write_timeline_is_a_chrome_trace(one_kernel, tmp_path):
    _, g = one_kernel
    p = daydream.predict(g, "faster_gpu:factor=2")
    out = tmp_path / "timeline.json"
    daydream.write_timeline(out, {"baseline": (g, g.simulate()), "predicted: faster_gpu": p.result})
    events = json.loads(out.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    assert names == {"baseline", "predicted: faster_gpu"}
    kernels = [e for e in events if e.get("ph") == "X" and e["name"] == "gemm_kernel" and e["cat"] == "kernel"]
    assert sorted(e["dur"] for e in kernels) == [50, 100]  # us


def test_write_timeline_rejects_a_stale_result(one_kernel, tmp_path):
    _, g = one_kernel
    result = g.simulate()
    g.insert("allreduce", 1000, "nccl", after=[g.task(0)])
    with pytest.raises(ValueError, match="simulates 10 tasks but its graph has 11"):
        daydream.write_timeline(tmp_path / "t.json", {"stale": (g, result)})
    with pytest.raises(TypeError, match="must be a Result or a \\(Graph, Result\\) pair"):
        daydream.write_timeline(tmp_path / "t.json", {"bad": g})


# --- daydream.plot ---

def test_plot_sweep_draws_sorted_labelled_bars(one_kernel):
    """Issue 17 item 6: the axis starts near the data, failed rows are named, grids over a number
    draw lines (below); scenarios of different kinds stay bars."""
    pytest.importorskip("matplotlib", reason="daydream.plot needs matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from daydream.plot import plot_sweep

    _, g = one_kernel
    df = daydream.sweep(g, ["faster_gpu:factor=4", "faster_gpu:factor=2,kind=all", "faster_gpu:factor=0.5",
                            "faster_gpu:kind=tpu"])
    ax = plot_sweep(df)
    assert [t.get_text() for t in ax.get_yticklabels()] == \
        ["faster_gpu:kind=tpu", "faster_gpu:factor=0.5", "faster_gpu:factor=2,kind=all", "faster_gpu:factor=4"]
    ends = [bar.get_x() + bar.get_width() for bar in ax.patches]
    assert ends == pytest.approx([200 / 300, 200 / 150, 200 / 125])  # best on top, failed row at the bottom
    low, high = ax.get_xlim()
    assert 0.5 < low < 200 / 300 and high > 1.6  # not from 0
    assert [t.get_text() for t in ax.texts] == \
        ["0.67x", "1.33x", "1.60x", " failed: scenario 'faster_gpu': parameter 'kind' = 'tpu' is not a ..."]
    assert any(list(line.get_xdata()) == [1.0, 1.0] for line in ax.get_lines())  # the baseline
    assert "1 failed" in ax.get_title()


def test_plot_sweep_draws_a_line_against_a_grid_parameter(one_kernel):
    pytest.importorskip("matplotlib", reason="daydream.plot needs matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from daydream.plot import plot_sweep

    _, g = one_kernel
    df = daydream.sweep(g, ["faster_gpu:factor=1.001|2|4", "faster_gpu:factor=1.5|3,kind=all"])
    ax = plot_sweep(df)
    assert ax.get_xlabel() == "factor"
    lines = {line.get_label(): list(line.get_xdata()) for line in ax.get_lines()}
    assert lines == {"faster_gpu": [1.001, 2, 4], "faster_gpu kind=all": [1.5, 3], "baseline": [0, 1]}
    # 200/199.8 = 1.0005 would print as 1.00x with 2 decimals: every label gets 3
    assert [t.get_text() for t in ax.texts] == ["1.001x", "1.333x", "1.600x", "1.200x", "1.500x"]
    assert ax.get_ylim() == pytest.approx((1.0 - 0.06, 1.6 + 0.09))  # not from 0

    bandwidths = daydream.sweep(g, ["pinned_memory:bandwidth=10Gbps|20Gbps|40Gbps"])
    ax = plot_sweep(bandwidths)
    assert ax.get_xlabel() == "bandwidth (Gb/s)"  # from bandwidth_bytes_per_s, in human units
    assert list(ax.get_lines()[0].get_xdata()) == pytest.approx([10, 20, 40])
    with pytest.raises(ValueError, match="no column 'nope'"):
        plot_sweep(df, x="nope")


def test_plot_timeline_panels_and_rows(one_kernel):
    pytest.importorskip("matplotlib", reason="daydream.plot needs matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from daydream.plot import plot_timeline

    _, g = one_kernel
    p = daydream.predict(g, "faster_gpu:factor=2")
    figure = plot_timeline(p.baseline_result, p.result)
    top, bottom = figure.axes[:2]
    assert [t.get_text() for t in top.get_yticklabels()] == ["thread 1", "GPU 0 stream 7"]
    assert top.get_title(loc="left") == "baseline: 0.200 ms total"
    assert bottom.get_title(loc="left") == "predicted: 0.150 ms total"
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["cpu", "runtime", "kernel"]

    _, ax = plt.subplots()
    assert plot_timeline(p.baseline_result, p.result, ax=ax, units=["GPU 0 stream 7"], window_ms=(0, 0.1)) is ax.figure
    assert [t.get_text() for t in ax.get_yticklabels()] == ["baseline | GPU 0 stream 7", "", "predicted | GPU 0 stream 7"]
    assert ax.get_xlim() == (0, 0.1)
    with pytest.raises(ValueError, match="no unit named"):
        plot_timeline(p.baseline_result, p.result, units=["GPU 9"])
    plt.close("all")


def test_plot_without_matplotlib_says_how_to_install(one_kernel, monkeypatch):
    from daydream import plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    _, g = one_kernel
    with pytest.raises(ImportError, match="daydream.plot needs matplotlib.*pip install matplotlib"):
        plot.plot_timeline(g.simulate(), g.simulate())
