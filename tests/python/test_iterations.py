"""Iterations from annotations: daydream.load(path, iterations=REGEX), Graph.iteration_rule, and
the start-to-start times of a loop's own ranges (docs/graph.md, "Iterations")."""

import json
import subprocess

import pytest

import daydream
from kineto_builder import KinetoJson


def epochs_trace(tmp_path):
    """Two `epoch-N` ranges on thread 1, 200 us apart, each around an operator with one launch;
    a third range `epoch-2b` that ^epoch-[0-9]+$ does not name."""
    t = KinetoJson()
    t.annotation("epoch-1", 0, 100)
    t.cpu_op("aten::mm", 10, 30)
    t.launch("sgemm", 20, 1, kernel_ts=35, kernel_dur=40)
    t.annotation("epoch-2b", 150, 10)
    t.annotation("epoch-2", 300, 100)
    t.cpu_op("aten::mm", 310, 30)
    t.launch("sgemm", 320, 2, kernel_ts=335, kernel_dur=40)
    return t.write(tmp_path / "epochs.json")


def test_load_with_iterations_pattern(tmp_path):
    g = daydream.load(epochs_trace(tmp_path), iterations="^epoch-[0-9]+$")
    assert g.iterations == ["epoch-1", "epoch-2"]
    rule = g.iteration_rule
    assert isinstance(rule, dict)
    assert rule == {
        "pattern": "^epoch-[0-9]+$",
        "form": "^epoch-[0-9]+$",
        "measure": "start_to_start",
        "thread": "thread 1",
        "description": "ranges matching /^epoch-[0-9]+$/ on thread 1, measured start to start "
                       "(the last one: its range)",
    }
    # epoch-1 runs from its start to epoch-2's start (300 us), epoch-2 is its range (100 us).
    result = g.simulate()
    assert result.iteration_names == ["epoch-1", "epoch-2"]
    assert result.measured_iteration_times_ns == [300_000, 100_000]
    assert result.iteration_times_ns == [300_000, 100_000]
    replay = g.replay()
    assert replay["iteration_rule"]["measure"] == "start_to_start"
    assert [it["name"] for it in replay["iterations"]] == ["epoch-1", "epoch-2"]


def test_default_forms_without_pattern(tmp_path):
    g = daydream.load(epochs_trace(tmp_path))
    assert g.iterations == []
    assert g.iteration_rule["pattern"] is None
    assert g.iteration_rule["form"] == ""
    assert g.iteration_rule["thread"] == ""
    assert g.iteration_rule["description"].startswith("no iterations")

    t = KinetoJson()
    t.annotation("Step 1", 0, 100).cpu_op("aten::mm", 10, 30)
    t.annotation("Step 2", 150, 100).cpu_op("aten::mm", 160, 30)
    g = daydream.load(t.write(tmp_path / "steps.json"))
    assert g.iterations == ["Step 1", "Step 2"]
    assert g.iteration_rule["pattern"] is None
    assert g.iteration_rule["form"] == "step N"
    assert g.iteration_rule["measure"] == "start_to_start"
    assert g.simulate().measured_iteration_times_ns == [150_000, 100_000]

    t = KinetoJson()
    t.annotation("ProfilerStep#1", 0, 100).annotation("step 1", 10, 50).cpu_op("aten::mm", 20, 10)
    g = daydream.load(t.write(tmp_path / "profiler.json"))
    assert g.iterations == ["ProfilerStep#1"]
    assert g.iteration_rule["form"] == "ProfilerStep#N"
    assert g.iteration_rule["measure"] == "range"


def test_invalid_pattern_is_a_daydream_error(tmp_path):
    with pytest.raises(daydream.Error, match="iterations.*invalid iterations pattern.*not a regular expression RE2 accepts"):
        daydream.load(epochs_trace(tmp_path), iterations="epoch-([0-9]")


def test_unmatched_pattern_gives_no_iterations(tmp_path):
    g = daydream.load(epochs_trace(tmp_path), iterations="^batch [0-9]+$")
    assert g.iterations == []
    assert g.iteration_rule["pattern"] == "^batch [0-9]+$"
    assert g.iteration_rule["thread"] == ""


def test_one_definition_of_iteration_time(example_trace, cli):
    """replay (CLI and Python), Result.iteration_times_ms and predict's baseline give one number
    per step: the measured window, simulated (issue: 21.114 vs 21.144 ms on ProfilerStep#2)."""
    g = daydream.load(example_trace)
    result = g.simulate()
    prediction = daydream.predict(g, "faster_gpu:factor=1")
    baseline = prediction.iterations["baseline_ms"].tolist()
    assert baseline == result.iteration_times_ms
    run = lambda *args: json.loads(subprocess.run([cli, *args], capture_output=True, check=True, text=True).stdout)
    replay = run("replay", "--json", str(example_trace))
    assert [it["simulated_ms"] for it in replay["iterations"]] == pytest.approx(baseline, abs=1e-6)
    # The bundled trace replays exactly: each iteration is its measured range, to the ns.
    assert result.iteration_times_ns == result.measured_iteration_times_ns
    assert prediction.baseline_ns == sorted(result.iteration_times_ns)[1]  # the lower middle of 4
    predicted = run("predict", "--json", "--scenario", "amp", str(example_trace))
    assert predicted["iteration_rule"]["measure"] == "range"
    assert [it["baseline_ms"] for it in predicted["iterations"]] == pytest.approx(baseline, abs=1e-6)


def test_optimizer_steps_end_iterations_without_step_marks(tmp_path):
    t = KinetoJson()
    for k in range(3):
        t.cpu_op("aten::mm", 100 * k, 40)
        t.annotation("Optimizer.step#SGD.step", 100 * k + 50, 20)
    g = daydream.load(t.write(tmp_path / "optimizer_steps.json"))
    assert g.iterations == ["optimizer step 2", "optimizer step 3"]
    assert g.iteration_rule["measure"] == "end_to_end"
    assert g.simulate().iteration_times_ns == [100_000, 100_000]
    prediction = daydream.predict(g, "faster_gpu:factor=2")
    assert list(prediction.iterations["name"]) == ["optimizer step 2", "optimizer step 3"]


def test_a_trace_without_iterations_has_no_median_row(tmp_path, cli):
    t = KinetoJson()
    t.cpu_op("aten::mm", 0, 30)
    t.launch("sgemm", 10, 1, kernel_ts=20, kernel_dur=40)
    path = str(t.write(tmp_path / "unmarked.json"))
    out = subprocess.run([cli, "predict", path, "--scenario", "faster_gpu:factor=2"], capture_output=True, check=True,
                         text=True).stdout
    rows = [line.split()[0] for line in out.splitlines()[5:] if line.strip()]
    assert "median" not in rows
    assert "iterations: no iterations: no CPU range is named" in out
    assert any(line.startswith("total (whole run)") for line in out.splitlines())
    sweep = subprocess.run([cli, "sweep", path, "--scenario", "faster_gpu:factor=2"], capture_output=True, check=True,
                           text=True).stdout
    assert "each row gives the whole run" in sweep
