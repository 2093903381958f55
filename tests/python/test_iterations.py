"""Iterations from annotations: daydream.load(path, iterations=REGEX), Graph.iteration_rule, and
the start-to-start times of a loop's own ranges (docs/graph.md, "Iterations")."""

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
    with pytest.raises(daydream.Error, match="iterations.*invalid regular expression"):
        daydream.load(epochs_trace(tmp_path), iterations="epoch-([0-9]")


def test_unmatched_pattern_gives_no_iterations(tmp_path):
    g = daydream.load(epochs_trace(tmp_path), iterations="^batch [0-9]+$")
    assert g.iterations == []
    assert g.iteration_rule["pattern"] == "^batch [0-9]+$"
    assert g.iteration_rule["thread"] == ""
