"""rank_speed in Python: the twin of the built-in (scenarios/rank_speed.cpp). On a multi-rank job graph
(daydream.load of every rank's trace), one rank's compute (GPU kernels, copies, memsets and CPU
work; not its collectives) runs `factor` times as fast; by default the straggler of the baseline
replay, the rank the others waited for longest. docs/scenarios/rank_speed.md.

    import daydream, rank_speed
    job = daydream.load("traces/")  # one trace per rank
    rank_speed.apply(job)
"""

from network import job_collectives
from twin_support import llround

NAME = "rank_speed"
CASES = {"rank=1,factor=4": {"rank": 1, "factor": 4.0}}
COMPUTE = {"kind": ["cpu", "runtime", "kernel", "memcpy", "memset"], "unit_kind": ["cpu_thread", "gpu_stream"]}


def apply(graph, rank="auto", factor: float = 2.0) -> None:
    job_collectives(graph)  # a job graph, or ValueError
    if rank == "auto":  # the baseline replay's straggler: the only simulation this needs
        rank = graph.replay()["job"]["straggler"]
        if rank is None:
            raise ValueError("no rank held the others back; give 'rank'")
    if rank not in graph.job_layout()["ranks"]:
        raise ValueError(f"rank {rank} is not in the job")
    for task in graph.select(rank=rank, **COMPUTE):
        task.duration_ns = llround(task.duration_ns / factor)  # as the built-in rounds: d / factor
