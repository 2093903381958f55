"""The dataloader_workers twin (scenarios/examples/dataloader_workers.py) on the branch that no trace
of test_scenario_twins.py exercises: another CPU thread idle across the main thread's waits for
data, with no hand-off the graph could infer (an NVTX-only trace's autograd thread). The built-in
and the twin both make it follow the main thread (Graph.idle_across), to the same graph."""

import json
import sys
from pathlib import Path

import pytest

import daydream

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scenarios" / "examples"))
import dataloader_workers  # noqa: E402


def write_idle_thread_trace(path):
    """tests/unit/test_scenario_dataloader.cpp's two_workers_data_bound(true): 10 ms steps opened
    after the fetch, the waits for batches 0, 2, 4 and 6 before them (two recorded workers, 30 ms a
    batch), thread 2 working from 1 to 4 ms into each step."""
    def op(cat, name, ts_us, dur_us, tid=1):
        return {"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid, "ts": ts_us, "dur": dur_us, "args": {}}

    events = [op("cpu_op", "setup", 0, 1000)]
    for step, start_ms in enumerate([30.1, 40.2, 60.1, 70.2, 90.1, 100.2, 120.1, 130.2]):
        t0 = start_ms * 1000
        events += [op("user_annotation", f"step {step}", t0, 10000), op("cpu_op", "aten::conv2d", t0, 10000),
                   op("cpu_op", "autograd::engine::evaluate_function", t0 + 1000, 3000, tid=2)]
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [], "traceEvents": events}))
    return path


@pytest.mark.parametrize(("args", "kwargs"), [("recorded=2", {"recorded": 2}),
                                              ("recorded=2,workers=0", {"recorded": 2, "workers": 0}),
                                              ("recorded=1,workers=8,fetch=0", {"recorded": 1, "workers": 8, "fetch": 0.0})])
def test_a_thread_idle_across_a_wait_follows_the_main_thread_in_the_twin_as_in_the_builtin(tmp_path, args, kwargs):
    graph = daydream.load(str(write_idle_thread_trace(tmp_path / "idle_thread.json")))
    takes = graph.batch_takes()
    idle = graph.idle_across(graph.wait_windows(takes, daydream.estimate_loads(takes, 2)["waited_for"]))
    assert [i["to_task"].iteration for i in idle] == [2, 4, 6]
    builtin, python = graph.copy(), graph.copy()
    notes = daydream.apply_scenario(builtin, f"dataloader_workers:{args}")
    assert notes[-1].startswith("3 resumptions of other threads")
    dataloader_workers.apply(python, **kwargs)
    assert python.fingerprint() == builtin.fingerprint()
    assert python.simulate().iteration_times_ns == builtin.simulate().iteration_times_ns
