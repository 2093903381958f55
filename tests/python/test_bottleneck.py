"""daydream.bottleneck: the CLI's report as DataFrames, the same numbers as `bottleneck --json`."""

import json
import subprocess

import pytest

import daydream
from daydream._bottleneck import IDLE_CAUSES


def test_bottleneck_frames_match_the_cli(example_trace, cli):
    graph = daydream.load(example_trace)
    report = daydream.bottleneck(graph)
    printed = json.loads(subprocess.run([cli, "bottleneck", "--json", str(example_trace)], capture_output=True,
                                        text=True, check=True).stdout)
    assert report.summary == printed["summary"]
    assert report.summary in subprocess.run([cli, "replay", str(example_trace)], capture_output=True, text=True,
                                            check=True).stdout  # replay ends with the same line
    assert report.iteration_ms == printed["iteration_ms"] and report.iterations == printed["iterations"]
    categories = dict(zip(report.categories["category"], report.categories["ms"]))
    assert categories == pytest.approx(printed["critical_path"]["by_category_ms"])
    assert report.dominant == printed["critical_path"]["dominant"]
    assert report.categories["share"].sum() == pytest.approx(1.0)
    top = [(row["name"], row["ms"]) for row in printed["top_kernels"]]
    assert list(zip(report.kernels["name"], report.kernels["ms"]))[:len(top)] == top
    (stream,) = printed["gpu_streams"]
    row = report.streams.iloc[0]
    assert row["unit"] == stream["unit"]
    for cause in IDLE_CAUSES:
        assert row[f"{cause}_ms"] == pytest.approx(stream["idle_by_cause_ms"][cause])
    assert row["busy_ms"] + row["idle_ms"] == pytest.approx(row["window_ms"])
    # The example's GPU waits for its single-process DataLoader: data is the largest idle cause.
    assert max(IDLE_CAUSES, key=lambda cause: row[f"{cause}_ms"]) == "data"


def test_bottleneck_leaves_the_graph_alone(example_trace):
    graph = daydream.load(example_trace)
    before = graph.fingerprint()
    assert "Bottleneck" in repr(daydream.bottleneck(graph))
    assert graph.fingerprint() == before
