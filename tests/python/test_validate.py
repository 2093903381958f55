"""daydream.validate and `daydream validate`: a prediction checked against a measured run, with
exact numbers on tiny hand-built traces.

The profiler-step trace (times in us, one CPU thread, stream 7) replays exactly:
    ProfilerStep#1 0..200: aten::mm 10..30 (launch 15..20 of gemm_kernel, which runs 30..130),
    cudaDeviceSynchronize 40..135, after_sync 140..150; ProfilerStep#2 200..300: aten::add_.
"""

import json
import math
import subprocess

import pytest

import daydream
from conftest import one_kernel_trace
from kineto_builder import KinetoJson

SUMMARY_KEYS = ["before", "after", "scenario", "iteration_rule", "before_iteration_rule", "compared", "predicted",
                "measured", "error", "baseline", "before_measured", "replay_error", "speedup", "notes",
                "scenario_notes"]


def profiler_steps(steps: int = 2) -> KinetoJson:
    t = one_kernel_trace()
    for n in range(2, steps + 1):
        start = 200 + 100 * (n - 2)
        t.annotation(f"ProfilerStep#{n}", start, 100)
        t.cpu_op("aten::add_", start + 10, 50)
    return t


def loop_steps(steps: int) -> KinetoJson:
    """`step N` ranges (measured start to start) of 60 us each, opened every 100 us: the 40 us
    between two ranges is the wait for the next batch."""
    t = KinetoJson()
    for n in range(steps):
        t.annotation(f"step {n}", 100 * n, 60)
        t.cpu_op("aten::add_", 100 * n + 10, 40)
    return t


def no_steps() -> KinetoJson:
    t = KinetoJson()
    t.cpu_op("aten::add_", 10, 40)
    return t


@pytest.fixture
def steps(tmp_path):
    return profiler_steps().write(tmp_path / "steps.json")


def test_a_trace_against_itself_has_no_error(steps):
    frame = daydream.validate(steps, steps, "faster_gpu:factor=1")
    assert list(frame.columns) == ["name", "predicted_ms", "measured_ms", "error", "baseline_ms",
                                   "before_measured_ms", "compared"]
    assert frame["name"].tolist() == ["ProfilerStep#1", "ProfilerStep#2"]
    assert frame["predicted_ms"].tolist() == frame["measured_ms"].tolist() == [0.2, 0.1]
    assert frame["error"].tolist() == [0.0, 0.0]
    assert frame["compared"].tolist() == [True, True]
    a = frame.attrs
    assert list(a) == SUMMARY_KEYS
    assert a["error"] == {"median": 0.0, "mean": 0.0}
    assert a["replay_error"] == {"median": 0.0, "mean": 0.0}
    assert a["predicted"] == a["measured"] == a["baseline"] == a["before_measured"] == {"median_ms": 0.1, "mean_ms": 0.15}
    assert a["speedup"] == {"median": 1.0, "mean": 1.0}
    assert a["before"] == a["after"] == str(steps)
    assert a["scenario"] == "faster_gpu:factor=1" and a["compared"] == 2 and a["notes"] == []
    assert a["iteration_rule"]["form"] == "ProfilerStep#N" and a["iteration_rule"]["measure"] == "range"


def test_errors_of_a_prediction(steps):
    # The kernel twice as fast: step 1 takes 150 us instead of 200, step 2 is CPU only.
    frame = daydream.validate(daydream.load(steps), steps, "faster_gpu:factor=2")
    assert frame["predicted_ms"].tolist() == [0.15, 0.1]
    assert frame["error"].tolist() == [-0.25, 0.0]
    a = frame.attrs
    assert a["predicted"] == {"median_ms": 0.1, "mean_ms": 0.125}
    assert a["error"]["median"] == 0.0 and a["error"]["mean"] == pytest.approx(-1 / 6, abs=1e-6)
    assert a["speedup"]["mean"] == pytest.approx(1.2, abs=1e-6)


def test_counts_differ_compares_the_common_prefix(tmp_path):
    before = profiler_steps(3).write(tmp_path / "three.json")
    after = profiler_steps(2).write(tmp_path / "two.json")
    frame = daydream.validate(before, after, "faster_gpu:factor=1")
    assert frame["name"].tolist() == ["ProfilerStep#1", "ProfilerStep#2"]
    assert frame.attrs["compared"] == 2
    assert frame.attrs["notes"] == ["BEFORE has 3 iterations and AFTER 2: compared over the first 2"]


def test_start_to_start_leaves_the_last_iteration_out(tmp_path):
    before = loop_steps(4).write(tmp_path / "four.json")
    after = loop_steps(3).write(tmp_path / "three.json")
    frame = daydream.validate(before, after, "faster_gpu:factor=1")
    assert frame["measured_ms"].tolist() == [0.1, 0.1, 0.06]  # the last one of AFTER: its range
    assert frame["compared"].tolist() == [True, True, False]
    a = frame.attrs
    assert a["compared"] == 2 and a["measured"] == {"median_ms": 0.1, "mean_ms": 0.1}
    assert a["iteration_rule"]["measure"] == "start_to_start"
    assert any("'step 2' is measured as its range" in note and "left out" in note for note in a["notes"])


def test_missing_file_and_runs_without_iterations_raise_naming_the_file(steps, tmp_path):
    with pytest.raises(daydream.Error, match="absent.json"):
        daydream.validate(steps, tmp_path / "absent.json", "amp")
    flat = no_steps().write(tmp_path / "flat.json")
    with pytest.raises(daydream.Error, match=r"flat\.json.*AFTER run: no iterations"):
        daydream.validate(steps, flat, "faster_gpu")
    with pytest.raises(daydream.Error, match=r"flat\.json.*BEFORE run: no iterations"):
        daydream.validate(flat, steps, "faster_gpu")


def test_bad_specs_raise(steps):
    with pytest.raises(daydream.Error, match="unknown scenario 'fastest_gpu'"):
        daydream.validate(steps, steps, "fastest_gpu")
    with pytest.raises(daydream.Error, match="is a grid"):
        daydream.validate(steps, steps, "faster_gpu:factor=1|2")
    with pytest.raises(TypeError, match="a Graph or a path"):
        daydream.validate(42, steps, "faster_gpu")


def test_cli_json_is_the_python_summary(cli, steps):
    out = subprocess.run([cli, "validate", str(steps), str(steps), "--scenario", "faster_gpu:factor=2", "--json"],
                         check=True, capture_output=True, text=True).stdout
    d = json.loads(out)
    assert list(d) == ["before", "after", "scenario", "iteration_rule", "before_iteration_rule", "iterations",
                       *SUMMARY_KEYS[5:]]
    assert [list(it) for it in d["iterations"]] == [["name", "predicted_ms", "measured_ms", "error", "baseline_ms",
                                                     "before_measured_ms", "compared"]] * 2
    frame = daydream.validate(steps, steps, "faster_gpu:factor=2")
    assert {k: v for k, v in d.items() if k != "iterations"} == frame.attrs
    assert [it["error"] for it in d["iterations"]] == frame["error"].tolist()
    assert not any(isinstance(v, float) and math.isnan(v) for v in frame.attrs["error"].values())


def test_cli_missing_file_fails_cleanly(cli, steps, tmp_path):
    out = subprocess.run([cli, "validate", str(steps), str(tmp_path / "absent.json"), "--scenario", "amp"],
                         capture_output=True, text=True)
    message = out.stderr  # errors go to stderr, stdout stays clean (docs/cli.md)
    assert out.returncode == 1 and "absent.json: no such file or directory" in message
