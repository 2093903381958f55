"""The Perfetto timeline reads like the user's trace (issue 17 item 5): operators nest as recorded
(no leaf fragments), one slice per iteration, flow arrows from launches to GPU tasks, the trace's
args, the critical path as a track, .json.gz, units a change adds, iterations aligned."""

import collections
import gzip
import json
import subprocess
from pathlib import Path

import pytest

import daydream

REPO = Path(__file__).resolve().parents[2]
SHAPES = REPO / "tests" / "data" / "roofline" / "shapes.json"


def events_of(path: Path) -> list:
    data = path.read_bytes()
    if path.suffix == ".gz":
        assert data[:2] == b"\x1f\x8b", "not gzip"
        data = gzip.decompress(data)
    return json.loads(data)["traceEvents"]


def slices(events, pid=None, cat=None) -> list:
    return [e for e in events if e["ph"] == "X" and (pid is None or e["pid"] == pid) and (cat is None or e["cat"] == cat)]


def threads(events, pid) -> dict:
    return {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid}


def improperly_nested(events) -> list:
    """Slices that start inside another slice of their thread and end after it."""
    bad, by_thread = [], collections.defaultdict(list)
    for e in slices(events):  # in exact ns: ts and dur have three decimals of us
        start = round(e["ts"] * 1000)
        by_thread[(e["pid"], e["tid"])].append((start, start + round(e["dur"] * 1000), e["name"]))
    for thread in by_thread.values():
        stack = []
        for start, end, name in sorted(thread, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                bad.append((stack[-1][2], name))
            stack.append((start, end, name))
    return bad


@pytest.fixture(scope="module")
def amp_timeline(example_trace, tmp_path_factory):
    prediction = daydream.predict(daydream.load(example_trace), "faster_gpu:factor=2")
    path = tmp_path_factory.mktemp("timeline") / "amp.json.gz"
    daydream.write_timeline(path, {"baseline": prediction.baseline_result, "predicted": prediction.result})
    return prediction, events_of(path)


def test_operators_nest_as_recorded_without_leaf_fragments(amp_timeline):
    _, events = amp_timeline
    assert improperly_nested(events) == []
    for pid in (1, 2):
        ops = slices(events, pid, "cpu_op")
        assert [e["name"] for e in ops if e["name"].startswith("ProfilerStep#")] == [f"ProfilerStep#{i}" for i in range(1, 5)]
        assert slices(events, pid, "cpu") == []  # every CPU piece is drawn as its operator
        # each CUDA call sits inside an operator of its thread
        for call in slices(events, pid, "runtime"):
            assert any(op["tid"] == call["tid"] and op["ts"] <= call["ts"] and
                       call["ts"] + call["dur"] <= op["ts"] + op["dur"] for op in ops), call["name"]
    conv = next(e for e in slices(events, 1, "cpu_op") if e["name"] == "aten::conv2d")
    assert isinstance(conv["args"]["event"], int)  # the trace's event index


def test_one_slice_per_iteration_aligned_across_timelines(amp_timeline):
    prediction, events = amp_timeline
    baseline, predicted = (slices(events, pid, "iteration") for pid in (1, 2))
    assert [e["name"] for e in baseline] == [e["name"] for e in predicted] == [f"ProfilerStep#{i}" for i in range(1, 5)]
    assert [e["ts"] for e in baseline] == [e["ts"] for e in predicted]  # iteration k starts together
    assert [e["dur"] / 1e3 for e in baseline] == pytest.approx(prediction.baseline_result.iteration_times_ms, abs=1e-6)
    assert [e["dur"] / 1e3 for e in predicted] == pytest.approx(prediction.result.iteration_times_ms, abs=1e-6)
    # the predicted run's own times are kept in the args where the display shifted them
    shifted = [e for e in slices(events, 2, "kernel") if "simulated_start_us" in e["args"]]
    assert shifted and all(e["args"]["simulated_start_us"] < e["ts"] for e in shifted)


def test_flows_join_each_launch_to_its_gpu_task_with_the_trace_args(amp_timeline):
    _, events = amp_timeline
    for pid in (1, 2):
        starts = {e["id"]: e for e in events if e["ph"] == "s" and e["pid"] == pid}
        ends = {e["id"]: e for e in events if e["ph"] == "f" and e["pid"] == pid}
        gpu = [e for e in slices(events, pid) if e["cat"] in ("kernel", "memcpy", "memset")]
        assert starts.keys() == ends.keys() and len(starts) == len(gpu)
        gpu_starts = {(e["tid"], e["ts"]) for e in gpu}
        assert all((f["tid"], f["ts"]) in gpu_starts and f["bp"] == "e" for f in ends.values())
    kernel = slices(events, 1, "kernel")[0]
    assert {"correlation", "device", "stream", "operator"} <= kernel["args"].keys()
    assert threads(events, 1)[kernel["tid"]] == f"GPU {kernel['args']['device']} stream {kernel['args']['stream']}"


def test_critical_path_is_a_track_and_marked_on_tasks(amp_timeline):
    prediction, events = amp_timeline
    for pid, result in ((1, prediction.baseline_result), (2, prediction.result)):
        assert threads(events, pid)[2] == "critical path"
        track = slices(events, pid, "critical")
        assert len(track) > 0 and improperly_nested(track) == []
        assert {e["args"]["id"] for e in track} <= {task.id for task in result.critical_path}
        drawn = {e["args"]["id"]: e["args"]["critical"] for e in slices(events, pid) if "critical" in e["args"]}
        on_path = {task.id for task in result.critical_path}
        assert drawn and all(critical == (task in on_path) for task, critical in drawn.items())


def test_units_a_change_adds_are_named_and_shapes_are_kept(tmp_path):
    graph = daydream.load(SHAPES)
    changed = graph.copy()
    changed.insert("all_reduce", 5000, "nccl ring", after=[changed.task(0)])
    path = tmp_path / "added.json"
    daydream.write_timeline(path, {"baseline": graph.simulate(), "changed": changed.simulate()}, align=False)
    events = events_of(path)
    assert "nccl ring (added)" in threads(events, 2).values()
    assert "nccl ring (added)" not in threads(events, 1).values()
    linear = next(e for e in slices(events, 1, "cpu_op") if e["name"] == "aten::linear")
    assert linear["args"]["Input Dims"] == [[256, 1024], [512, 1024], [512]]
    assert linear["args"]["Input type"] == ["float", "float", "float"]


def test_cli_perfetto_writes_gzip(cli, example_trace, tmp_path):
    out = tmp_path / "p.json.gz"
    done = subprocess.run([cli, "predict", example_trace, "--scenario", "amp", "--perfetto", out],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    events = events_of(out)
    assert {e["args"]["name"] for e in events if e["name"] == "process_name"} == {"baseline", "predicted: amp"}
    assert len(slices(events, 2, "iteration")) == 4


def test_cli_docs_quote_the_timeline_as_it_is_written(cli, example_trace, tmp_path):
    """docs/cli.md's --perfetto example: each line (but "...") is a line of the file that
    `daydream predict EXAMPLE --scenario amp --perfetto` writes."""
    out = tmp_path / "amp.json"
    subprocess.run([cli, "predict", example_trace, "--scenario", "amp", "--perfetto", out], check=True,
                   capture_output=True)
    written = {line.rstrip(",") for line in out.read_text().splitlines()}
    doc = (REPO / "docs" / "cli.md").read_text()
    block = doc.split("### `--perfetto OUT.json`: the timelines", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    quoted = [line.rstrip(",") for line in block.splitlines() if line.strip() != "..."]
    assert len(quoted) >= 8
    assert [line for line in quoted if line not in written] == []
