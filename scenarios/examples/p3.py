"""p3 in Python: the twin of the built-in (scenarios/p3.cpp and p3_updates.cpp; docs/scenarios/p3.md).
Priority-based parameter propagation (Jayarajan et al., MLSys 2019) on n = machines x gpus GPUs.

Every gradient is cut into slices of at most `slice` bytes, each a ring all-reduce of its own
(latency + 2(n-1)/n * bytes / bandwidth) on one communication channel, ready with its gradient.
The channel sends the ready slice of the earliest layer first: apply() returns that schedule,
{slice task id: rank}, for Graph.simulate(schedule=...) (other tasks keep trace order). There is no
global barrier: once its slices are through, a parameter's update (its share of the optimizer
step's GPU tasks) runs just before the next forward pass reaches its layer. Where that layer cannot
be located (the last pass) the update stays in place and waits for its own slices only; where the
step's GPU tasks do not split evenly over the parameters, the step waits for all slices. A trace's
own all-reduces are removed and replaced by slices. Parameters as in ddp.py.

    import daydream, p3
    graph = daydream.load("trace.json.gz")
    schedule = p3.apply(graph, machines=4, gpus=2, params=25.6e6)
    print(graph.simulate(schedule=schedule).iteration_times_ms)
"""

from ddp import assign_sizes, backward_passes, cluster_cost
from twin_support import llround

NAME = "p3"
CASES = {
    "machines=2,gpus=4,params=25.6e6": {"machines": 2, "gpus": 4, "params": 25.6e6},
    "machines=4,gpus=2,inter=10Gbps,slice=1MB,params=25.6e6": {"machines": 4, "gpus": 2, "inter": 1.25e9,
                                                               "slice": 1e6, "params": 25.6e6},
    "gpus=8,latency=50us,bandwidth=25GB/s": {"gpus": 8, "latency": 50e3, "bandwidth": 25e9},
}


def insert_slices(graph, channel, p, cost, slice_bytes, order):
    """Each gradient's slices (forward order), each ready with its gradient, ranked earliest layer first."""
    slices = []
    for j, g in enumerate(reversed(p.gradients)):
        slices.append([])
        for offset in range(0, g["bytes"], slice_bytes):
            size = min(slice_bytes, g["bytes"] - offset)
            task = graph.insert(f"p3 slice of parameter {j} ({size / 1e6:.2f} MB)", cost.allreduce_ns(size), channel,
                                after=[g["ready"]], phase="backward")
            order[task.id] = float(len(order))
            slices[-1].append(task)
    return slices


def move_updates_before_forward(graph, p, slices, uses, per_param):
    """Each parameter's update, as one kernel, just before its layer's first use in the next forward."""
    updates, gradients, last_at_use = p.update_tasks, p.gradients, {}
    for j, use in enumerate(uses):
        after = slices[j] or [gradients[-1 - j]["ready"]]
        if use.id in last_at_use:
            after = after + [last_at_use[use.id]]
        duration = sum(t.duration_ns for t in updates[j * per_param:(j + 1) * per_param])
        last_at_use[use.id] = graph.insert(f"p3 update of parameter {j}", duration, use.unit_id, kind="kernel",
                                           after=after, before=[use], phase="update")
    for task in updates:
        graph.remove(task)


def gate_pass(graph, p, following, slices):
    """Updates before the next forward where there is one; else each parameter's slices gate its first
    update task in place, or, without a per-parameter split of the step, the barrier."""
    per_param = p.update_tasks_per_gradient()
    forward = graph.next_forward(p, following) if per_param and following is not None else []
    if forward:
        return move_updates_before_forward(graph, p, slices, graph.forward_use_tasks(p, forward), per_param)
    updates = p.update_tasks
    for j, param_slices in enumerate(slices):
        gate = updates[j * per_param] if per_param else p.barrier
        for s in param_slices if gate is not None else []:
            graph.connect(s, gate, "communication")
    return None


def apply(graph, machines: int = 1, gpus: int = 1, intra="auto", inter="auto", bandwidth="auto", latency="auto",
          params="auto", bytes_per_param: float = 4.0, param_file: str = "", slice: float = 50_000 * 4.0):
    """Changes `graph` in place; returns the schedule {task id: priority}, or None for one GPU."""
    collectives = graph.trace_collectives()
    traced = collectives.allreduce_tasks()
    if machines * gpus > 1:
        graph.world_size = machines * gpus  # one rank of a job of that many GPUs
    if traced:
        graph.remove_with_launches(traced)
    if machines * gpus == 1:
        return None
    cost = cluster_cost(collectives, machines, gpus, intra, inter, bandwidth, latency)
    passes = backward_passes(graph, collectives, need_gradients=True)
    assign_sizes(graph, passes, params, bytes_per_param, param_file)
    channel = graph.add_comm_channel("p3 slices")
    order = {}
    for k, p in enumerate(passes):
        slices = insert_slices(graph, channel, p, cost, llround(slice), order)
        gate_pass(graph, p, passes[k + 1] if k + 1 < len(passes) else None, slices)
    return order
