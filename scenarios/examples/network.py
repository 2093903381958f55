"""network in Python: the twin of the built-in (scenarios/network.cpp). On a multi-rank job graph,
every matched collective is re-costed with the alpha-beta model fitted to the job's own
collectives: each participant's transfer moves by cost(latency', bandwidth') - cost(fitted), so
what the model does not explain is kept. docs/scenarios/network.md.

    import daydream, network
    job = daydream.load("traces/")  # one trace per rank
    network.apply(job, bandwidth=12.5e9)  # bytes/s: 100 Gbps
"""

import math
import statistics

import daydream
from twin_support import llround

NAME = "network"
CASES = {"bandwidth=100Gbps": {"bandwidth": 12.5e9}, "latency=100us": {"latency": 100e3}}


def job_collectives(graph):
    """The matched collectives of a job graph; ValueError for anything else."""
    try:
        collectives = graph.job_collectives()
    except daydream.Error:
        collectives = []  # the graph of one trace
    if not collectives:
        raise ValueError("needs a multi-rank job graph with matched collectives")
    return collectives


def job_link(graph, latency, bandwidth):
    """(fitted link or None, wanted link) as (latency_ns, ns_per_byte); the fit is to each sized
    collective's median transfer over its traffic."""
    collectives = job_collectives(graph)
    ranks = len(graph.job_layout()["ranks"])
    samples = [(daydream.collective_traffic_bytes(c["name"], len(c["ranks"]), float(c["bytes"])),
                statistics.median_high([t.duration_ns for t in c["transfers"]])) for c in collectives if c["bytes"] is not None]
    fit = daydream.fit_link(samples)
    fitted = None
    if fit and fit["ns_per_byte"] > 0:
        fitted = (max(0.0, fit["latency_ns"]), fit["ns_per_byte"])
    elif latency == "auto" or bandwidth == "auto":
        raise ValueError("cannot fit latency and bandwidth to the job's collectives; give both")
    wanted = list(fitted or (0.0, 0.0))
    if latency != "auto":
        wanted[0] = latency
    if bandwidth != "auto":
        wanted[1] = 0.0 if math.isinf(bandwidth) else 1e9 / bandwidth
    return collectives, ranks, fitted, tuple(wanted)


def recost(graph, collectives, traced_ranks, fitted, wanted, ranks):
    """Every transfer moved by the wanted cost minus the fitted one, for `ranks` participants."""
    for c in collectives:
        sized = c["bytes"] is not None
        before = daydream.collective_traffic_bytes(c["name"], traced_ranks, float(c["bytes"])) if sized else 0
        after = daydream.collective_traffic_bytes(c["name"], ranks, float(c["bytes"])) if sized else 0
        delta = (wanted[0] + wanted[1] * after) - ((fitted[0] + fitted[1] * before) if fitted else 0.0)
        for task in c["transfers"]:
            base = task.duration_ns if fitted else 0
            task.duration_ns = max(0, base + llround(delta))


def apply(graph, bandwidth="auto", latency="auto") -> None:
    collectives, ranks, fitted, wanted = job_link(graph, latency, bandwidth)
    recost(graph, collectives, ranks, fitted, wanted, ranks)
