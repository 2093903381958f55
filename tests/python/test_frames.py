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


def test_sweep_frame_and_csv_have_the_same_numeric_parameter_columns(example_trace, cli):
    """Issue 17 item 6: a sweep's parameters are numbers in canonical units, the unit in the
    column's name, in the frame and in `sweep --csv` alike."""
    import io
    import subprocess

    specs = ["faster_gpu:factor=2|4.5", "pinned_memory:bandwidth=10Gbps", "cuda_graphs:launch=5us,region=ProfilerStep",
             "dataloader_workers:workers=2", "ddp:machines=2,bucket=25MiB"]
    frame = daydream.sweep(daydream.load(example_trace), specs)
    parameters = ["factor", "bandwidth_bytes_per_s", "launch_ns", "region", "workers", "machines", "bucket_bytes"]
    assert list(frame.columns[7:]) == parameters
    assert frame["bandwidth_bytes_per_s"].tolist()[2] == 1.25e9  # 10 Gb/s
    assert frame["launch_ns"].tolist()[3] == 5000.0
    assert frame["bucket_bytes"].tolist()[5] == 25 * 2**20
    assert frame["factor"].tolist()[:2] == [2.0, 4.5] and frame["factor"].isna().tolist()[2:] == [True] * 4
    assert {c: str(frame[c].dtype) for c in parameters} == {
        "factor": "float64", "bandwidth_bytes_per_s": "float64", "launch_ns": "float64", "region": "object",
        "workers": "Int64", "machines": "Int64", "bucket_bytes": "float64"}

    args = [cli, "sweep", example_trace, "--csv"] + [a for s in specs for a in ("--scenario", s)]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 1 and "1 of 6 scenarios failed" in done.stderr  # ddp: no backward pass in this trace
    csv = pd.read_csv(io.StringIO(done.stdout))
    assert list(csv.columns) == list(frame.columns)
    for column in ("factor", "bandwidth_bytes_per_s", "launch_ns", "workers", "machines", "bucket_bytes", "speedup"):
        assert csv[column].astype(float).tolist() == pytest.approx(frame[column].astype(float).tolist(), nan_ok=True,
                                                                    rel=1e-6), column


def test_sweep_parameter_named_like_a_result_column_gets_a_prefix(example_trace, cli):
    """With --price, `gpus` is a cost column: ddp's gpus parameter becomes param_gpus, in both."""
    import subprocess

    frame = daydream.sweep(daydream.load(example_trace), ["ddp:gpus=2"], price="builtin", device="A100-SXM4-40GB")
    assert "param_gpus" in frame.columns and frame["param_gpus"].tolist() == [2]
    out = subprocess.run([cli, "sweep", example_trace, "--scenario", "ddp:gpus=2", "--csv", "--price", "builtin",
                          "--device", "A100-SXM4-40GB"], capture_output=True, text=True).stdout  # exit 1: ddp fails here
    assert out.splitlines()[0].split(",") == list(frame.columns)
