"""ddp in Python: the twin of the built-in (scenarios/ddp.cpp and ddp_traced.cpp; docs/scenarios/ddp.md).
Data-parallel training (PyTorch DistributedDataParallel) on n = machines x gpus GPUs.

Each backward pass's gradients fill buckets in the order they become ready (DDP's rule: the first
bucket closes at first_bucket bytes, later ones at bucket bytes). Once a bucket's last gradient is
ready, its ring all-reduce, latency + 2(n-1)/n * bytes / bandwidth, runs on one communication
channel, in bucket order, and the optimizer's first GPU task waits for every bucket. A one-GPU DDP
run's recorded buckets are inserted where they were recorded. A trace of a DDP run keeps its
all-reduces: re-costed for a given cluster, re-bucketed for given caps (a pass's consecutive
all-reduces merge under DDP's rule), else as measured; broadcast_buffers=0 and
gradient_as_bucket_view=1 remove DDP's per-forward buffer broadcasts and its copies into .grad.

A parameter counts as given when it differs from its default (the built-in also counts a spec's
`machines=1` as given: on a DDP run's trace, it re-costs the all-reduces for one machine).

    import daydream, ddp
    graph = daydream.load("trace.json.gz")
    ddp.apply(graph, machines=4, gpus=2, inter=1.25e9, params=25.6e6)  # bytes/s: 10 Gbps
"""

import math

import daydream
from twin_support import llround

NAME = "ddp"
MIB = 1024 * 1024
BUCKET, FIRST_BUCKET = 25.0 * MIB, 1.0 * MIB
INTRA, INTER, LATENCY = 100e9, 10e9 / 8, 20e3  # what "auto" falls back to without a usable fit
CASES = {
    "machines=2,gpus=4,params=25.6e6": {"machines": 2, "gpus": 4, "params": 25.6e6},
    "machines=4,gpus=2,inter=10Gbps,latency=50us": {"machines": 4, "gpus": 2, "inter": 1.25e9, "latency": 50e3},
    "gpus=8,bandwidth=inf,latency=0": {"gpus": 8, "bandwidth": math.inf, "latency": 0.0},
    "gpus=2,bucket=100MiB,first_bucket=4MiB,params=25.6e6": {"gpus": 2, "bucket": 100 * MIB, "first_bucket": 4 * MIB,
                                                             "params": 25.6e6},
    "bucket=100MiB,params=25.6e6": {"bucket": 100 * MIB, "params": 25.6e6},
    "broadcast_buffers=0,gradient_as_bucket_view=1": {"broadcast_buffers": 0, "gradient_as_bucket_view": 1},
}


def given_total_bytes(params, bytes_per_param, param_file):
    """The model's gradient bytes from param_file or params, None when neither is given."""
    if param_file:
        return llround(sum(daydream.read_parameter_counts(param_file)) * bytes_per_param)
    return None if params == "auto" else llround(params * bytes_per_param)


def backward_passes(graph, collectives, need_gradients):
    passes = [p for p in graph.backward_passes(collectives) if p.gradients or not need_gradients]
    if not passes:
        raise ValueError("the trace shows no backward pass: no AccumulateGrad range")
    return passes


def assign_sizes(graph, passes, params, bytes_per_param, param_file):
    """Gradient sizes from param_file, else params, else each pass's recorded all_reduce sizes."""
    if param_file:
        counts = daydream.read_parameter_counts(param_file)
        if not all(p.set_gradient_bytes(counts, bytes_per_param) for p in passes):
            raise ValueError("param_file does not list one count per AccumulateGrad range")
        return
    total = given_total_bytes(params, bytes_per_param, param_file)
    if total is None and not all(not p.gradients or p.recorded_allreduce_bytes > 0 for p in passes):
        raise ValueError("the trace records no gradient sizes; give param_file or params")
    for p in passes:
        if p.gradients:
            graph.spread_over_gradients(p, total if total is not None else p.recorded_allreduce_bytes)


def usable_fit(collectives):
    fit = collectives.fit_ring()["fit"]
    return fit if fit and fit["usable"] else None


def cluster_cost(collectives, machines, gpus, intra, inter, bandwidth, latency):
    """The requested ring: `intra` on one machine, `inter` across (a flat ring is as fast as its
    slowest link); the usable fit to the traced all-reduces stands in for what is not given."""
    link, default = (intra, INTRA) if machines == 1 else (inter, INTER)
    link = bandwidth if bandwidth != "auto" else link
    fit = usable_fit(collectives)
    if latency == "auto":
        latency = fit["latency_ns"] if fit else LATENCY
    if link != "auto" or not fit:
        return daydream.RingCost(latency, daydream.ns_per_byte(default if link == "auto" else link), machines * gpus)
    return daydream.RingCost(latency, fit["ns_per_byte"], machines * gpus)


def traced_cluster_cost(graph, collectives, sizes, latency):
    """The traced ring, for merged buckets: the usable fit, else the bandwidth at which the model
    adds up to the traced all-reduces' measured times."""
    fit, ranks = usable_fit(collectives), collectives.ring_ranks()
    latency = latency if latency != "auto" else fit["latency_ns"] if fit else LATENCY
    ns_per_byte = fit["ns_per_byte"] if fit else graph.measured_ns_per_byte(sizes, ranks, latency)
    return daydream.RingCost(latency, ns_per_byte, ranks)


def rebucket(graph, passes, sizes, cost, first_cap, cap):
    """A merged bucket is the task of its last member, costed for the summed size; the other
    members go with their launch calls."""
    merged_away = []
    for p in passes:
        allreduces = p.allreduces
        for first, last, size in p.rebucket(sizes, first_cap, cap):
            if last - first >= 2:
                allreduces[last - 1].duration_ns = cost.allreduce_ns(size)
                merged_away += allreduces[first:last - 1]
    graph.remove_with_launches(merged_away)


def apply_to_traced_run(graph, collectives, c):
    """A DDP run's own all-reduces and copies change; `c` holds apply()'s parameters."""
    launches = daydream.LaunchIndex(graph)
    passes = graph.traced_passes(collectives)
    if c["gradient_as_bucket_view"] == 1:
        graph.remove_with_launches(graph.checked_copy_back(launches, passes)["copies"])
    if c["broadcast_buffers"] == 0:
        graph.remove_with_launches(graph.buffer_broadcast_tasks(launches))
    recost = c["machines"] != 1 or c["gpus"] != 1 or any(c[k] != "auto" for k in ("intra", "inter", "bandwidth"))
    if not recost and c["bucket"] == BUCKET and c["first_bucket"] == FIRST_BUCKET:
        return
    model_bytes = given_total_bytes(c["params"], c["bytes_per_param"], c["param_file"])
    sizes = graph.traced_allreduce_sizes(collectives, model_bytes)["bytes"]
    if recost:
        cluster = (c[k] for k in ("machines", "gpus", "intra", "inter", "bandwidth", "latency"))
        cost = cluster_cost(collectives, *cluster)
        if not sizes:
            raise ValueError("the trace's all-reduce tasks record no message size; give params or param_file")
        for task, size in sizes.items():
            task.duration_ns = cost.allreduce_ns(size)
    else:
        cost = traced_cluster_cost(graph, collectives, sizes, c["latency"])
    if c["bucket"] != BUCKET or c["first_bucket"] != FIRST_BUCKET:
        rebucket(graph, passes, sizes, cost, llround(c["first_bucket"]), llround(c["bucket"]))


def insert_allreduces(graph, channel, p, buckets, cost):
    """One all-reduce per bucket: after its ready task and the previous bucket, before the barrier."""
    previous = None
    for ready, size in buckets:
        previous = graph.insert(f"ddp all_reduce ({size / 1e6:.2f} MB)", cost.allreduce_ns(size), channel,
                                after=[ready] + ([previous] if previous is not None else []),
                                before=[p.barrier] if p.barrier is not None else [], phase="backward")


def apply(graph, machines: int = 1, gpus: int = 1, intra="auto", inter="auto", bandwidth="auto", latency="auto",
          bucket: float = BUCKET, first_bucket: float = FIRST_BUCKET, params="auto",
          bytes_per_param: float = 4.0, param_file: str = "", broadcast_buffers: int = 1,
          gradient_as_bucket_view: int = 0) -> None:
    spec = dict(locals())
    collectives = graph.trace_collectives()
    if machines * gpus > 1:
        graph.world_size = machines * gpus  # one rank of a job of that many GPUs
    if collectives.allreduce_tasks():
        return apply_to_traced_run(graph, collectives, spec)
    if machines * gpus == 1:
        return None
    cost = cluster_cost(collectives, machines, gpus, intra, inter, bandwidth, latency)
    passes = backward_passes(graph, collectives, need_gradients=False)
    channel = graph.add_comm_channel("ddp all-reduce")
    recorded = (bucket, first_bucket, params, param_file) == (BUCKET, FIRST_BUCKET, "auto", "") and all(
        p.recorded_buckets for p in passes)
    if not recorded:
        assign_sizes(graph, passes, params, bytes_per_param, param_file)
    launches = daydream.LaunchIndex(graph)
    for p in passes:
        buckets = (p.ready_recorded_buckets(collectives, launches) if recorded
                   else p.gradient_buckets(llround(first_bucket), llround(bucket)))
        insert_allreduces(graph, channel, p, buckets, cost)
    return None
