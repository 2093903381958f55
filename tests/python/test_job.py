"""Multi-rank jobs from Python: daydream.load([...]) merges ranks, Graph.replay() reports per rank
and for the job, the job scenarios run in sweeps (with an executor too), bad jobs raise."""

import concurrent.futures
import json
from pathlib import Path

import pandas.testing
import pytest

import daydream

DLRM = Path(__file__).resolve().parents[3] / "shared" / "traces" / "dlrm-v100-8ranks" / "kineto"


def rank_trace(rank: int, world: int, clock_us: float, cpu_us: float) -> str:
    """One rank of a two-rank step (as in tests/unit/test_job.cpp): a GEMM, cpu_us of CPU work,
    an all-reduce that ends at 650 us on every rank, a sync, an optimizer step; step = 690 us."""
    launch = 105 + cpu_us
    events = []

    def complete(cat, name, ts, dur, tid, args=None):
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts + clock_us, "dur": dur,
                       "args": args or {}})

    complete("user_annotation", "ProfilerStep#1", 0, 690, 1)
    complete("cpu_op", "aten::mm", 10, 20, 1)
    complete("cuda_runtime", "cudaLaunchKernel", 15, 5, 1, {"correlation": 1})
    complete("kernel", "gemm", 25, 50, 7, {"correlation": 1, "stream": 7, "device": 0})
    complete("cpu_op", "aten::cpu_work", 100, cpu_us, 1)
    complete("cpu_op", "record_param_comms", launch - 2, 10, 1,
             {"Collective name": "allreduce", "In msg nelems": 1000, "dtype": "Float", "Process Group Name": "0",
              "Group size": world})
    complete("cuda_runtime", "cudaLaunchKernel", launch, 4, 1, {"correlation": 2})
    complete("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", launch + 5, 650 - (launch + 5), 20,
             {"correlation": 2, "stream": 20, "device": 0})
    complete("cuda_runtime", "cudaDeviceSynchronize", launch + 9, 655 - (launch + 9), 1)
    complete("cpu_op", "optimizer", 660, 25, 1)
    return json.dumps({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
                       "deviceProperties": [{"id": 0, "name": "Test GPU"}], "traceEvents": events})


@pytest.fixture
def job_dir(tmp_path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "rank0.json").write_text(rank_trace(0, 2, 0, 200))
    (folder / "rank1.json").write_text(rank_trace(1, 2, 5000, 400))  # clock 5 ms ahead, arrives last
    return folder


def test_load_list_and_directory_give_the_same_job(job_dir):
    from_list = daydream.load([job_dir / "rank1.json", job_dir / "rank0.json"])
    from_dir = daydream.load(job_dir)
    assert from_list.fingerprint() == from_dir.fingerprint()
    assert from_dir.sources == (str(job_dir / "rank0.json"), str(job_dir / "rank1.json"))


def test_job_replay_dict(job_dir):
    report = daydream.load(job_dir).replay()
    assert list(report) == ["job", "ranks"]
    job = report["job"]
    assert job["world_size"] == 2 and job["partial"] is False and job["missing_ranks"] == []
    assert job["straggler"] == 1
    assert job["max_clock_skew_ms"] == 5.0
    (iteration,) = job["iterations"]
    assert iteration["name"] == "ProfilerStep#1" and iteration["measured_ms"] == 0.69
    assert abs(iteration["simulated_ms"] - 0.69) / 0.69 < 0.02
    assert [r["rank"] for r in report["ranks"]] == [0, 1]
    assert report["ranks"][1]["clock_offset_ms"] == 5.0
    for rank in report["ranks"]:
        assert set(rank["iterations"][0]) >= {"name", "measured_ms", "simulated_ms"}
    (collective,) = job["collectives"]
    assert collective["name"] == "allreduce" and collective["bytes"] == 4000 and collective["last_rank"] == 1


def test_job_scenarios_and_executor_sweep(job_dir):
    graph = daydream.load(job_dir)
    assert daydream.predict(graph, "rank_speed:rank=1,factor=2").speedup > 1.2
    # One collective size: no alpha-beta fit, so network and scale_out need latency and bandwidth.
    specs = ["rank_speed", "network:latency=10us,bandwidth=1GB/s", "scale_out:ranks=4,latency=10us,bandwidth=10GB/s",
             "network:latency=1ms"]
    local = daydream.sweep(graph, specs, threads=1)
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        remote = daydream.sweep(graph, specs, executor=pool)
    pandas.testing.assert_frame_equal(local, remote)
    assert local["error"][:3].isna().all()
    assert "give both latency and bandwidth" in local["error"][3]


def test_bad_jobs(tmp_path, job_dir):
    with pytest.raises(daydream.Error, match="rank 0 is also the rank of"):
        daydream.load([job_dir / "rank0.json", job_dir / "rank0.json"])
    (tmp_path / "other.json").write_text(rank_trace(1, 3, 0, 200))
    with pytest.raises(daydream.Error, match="not of one job"):
        daydream.load([job_dir / "rank0.json", tmp_path / "other.json"])
    partial = daydream.load([job_dir / "rank0.json"]).replay()["job"]
    assert partial["partial"] is True and partial["missing_ranks"] == [1]
    with pytest.raises(daydream.Error, match="needs a multi-rank job graph"):
        daydream.predict(daydream.load([job_dir / "rank0.json"]), "network")


def test_dlrm_job_within_two_percent():
    if not DLRM.is_dir():
        pytest.skip(f"shared traces absent: {DLRM}")
    report = daydream.load(DLRM).replay()
    assert len(report["ranks"]) == 8
    for rank in report["ranks"]:
        assert abs(rank["iterations"][0]["error"]) < 0.02
    assert abs(report["job"]["iterations"][0]["error"]) < 0.02


def test_job_accessors_and_short_repr(job_dir):
    job = daydream.load(job_dir)
    assert job.straggler == 1
    frame = job.ranks_frame()
    assert list(frame.columns) == ["rank", "iteration", "measured_ms", "simulated_ms", "error", "waited_ms",
                                   "held_back_ms", "last_arrivals", "critical_path_ms", "clock_offset_ms",
                                   "step_start_ms", "trace"]
    assert list(frame["rank"]) == [0, 1] and list(frame["measured_ms"]) == [0.69, 0.69]
    assert frame.attrs["straggler"] == 1
    assert frame.attrs["explanations"] and "critical path" in frame.attrs["explanations"][-1]
    text = repr(job)
    assert text.startswith(f'<daydream.Graph job: 2 of 2 ranks, traces in "{job_dir}/": ')
    assert "rank0.json" not in text  # the folder, not every trace
    single = daydream.load(job_dir / "rank0.json")
    assert single.straggler is None
    with pytest.raises(daydream.Error, match="not a multi-rank job graph"):
        single.ranks_frame()


@pytest.mark.skipif(not DLRM.is_dir(), reason="shared traces absent")
def test_dlrm_says_why_the_straggler_is_not_the_slowest_rank():
    frame = daydream.load(DLRM).ranks_frame()
    assert frame.attrs["straggler"] == 7 and frame.attrs["slowest_rank"] == 1
    assert frame.attrs["explanations"][0].startswith("rank 1 has the slowest step")
    assert frame.loc[frame["rank"] == 7, "step_start_ms"].item() > frame.loc[frame["rank"] == 1, "step_start_ms"].item()
