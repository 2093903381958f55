"""Result.to_pandas and Graph.tasks_frame (pandas/numpy are optional imports)."""

import sys

import pytest

import daydream

pd = pytest.importorskip("pandas", reason="pandas is not installed (python3 -m pip install pandas)")

RESULT_COLUMNS = ["id", "name", "kind", "unit", "start_ns", "end_ns", "duration_ns", "iteration", "phase", "layer"]
TASK_COLUMNS = ["id", "name", "kind", "unit", "duration_ns", "recorded_start_ns", "iteration", "phase", "layer", "op"]


def test_result_to_pandas(small_trace):
    g = daydream.load(small_trace)
    (memcpy,) = g.select(kind="memcpy")
    g.remove(memcpy)
    r = g.simulate()
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == RESULT_COLUMNS
    assert len(df) == len(g)  # one row per live task
    assert memcpy.id not in set(df["id"])
    assert str(df["start_ns"].dtype) == "int64"
    assert (df["end_ns"] - df["start_ns"] == df["duration_ns"]).all()
    row = df.set_index("id").loc[g.select(name="convolve").ids[0]]
    assert (row["name"], row["kind"], row["unit"], row["duration_ns"]) == (
        "implicit_convolve_sgemm", "kernel", "GPU 0 stream 7", 200_000)
    assert row["start_ns"] == r.start_ns(g.select(name="convolve").ids[0])
    assert df["end_ns"].max() == r.total_ns
    assert set(df["kind"]) == {"cpu", "runtime", "kernel"}
    assert set(df["phase"]) <= set(daydream.PHASES)
    assert df["layer"].isna().all()
    per_iteration = df.groupby("iteration")["duration_ns"].sum()
    assert list(per_iteration.index) == [0, 1]


def test_tasks_frame(example_trace):
    g = daydream.load(example_trace)
    df = g.tasks_frame()
    assert list(df.columns) == TASK_COLUMNS
    assert len(df) == len(g)
    assert list(df["id"]) == g.select().ids
    assert df.groupby("kind").size().to_dict() == {k: v for k, v in g.task_counts().items() if v}
    kernels = df[df["kind"] == "kernel"]
    assert kernels["duration_ns"].sum() == g.select(kind="kernel").total_duration_ns
    assert kernels["op"].notna().all()
    assert (df["iteration"] >= -1).all() and str(df["recorded_start_ns"].dtype) == "int64"


def test_frames_need_pandas(small_trace, monkeypatch):
    g = daydream.load(small_trace)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(ImportError, match="pip install pandas"):
        g.tasks_frame()
    with pytest.raises(ImportError, match="to_pandas"):
        g.simulate().to_pandas()
