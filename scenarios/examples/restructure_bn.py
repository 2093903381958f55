"""restructure_bn in Python: the twin of the built-in (scenarios/restructure_bn.cpp). BatchNorm
restructured and fused with its neighbours (Jung et al., SysML 2019), as the Daydream paper models
it: on each stream the ReLU/add kernels right after a BatchNorm forward kernel and the
ReLU-backward kernel right before a BatchNorm backward kernel are removed, with their launch calls
(and the operator's CPU work when it launched nothing else); every BatchNorm kernel is scaled by
bn_factor. docs/scenarios/restructure_bn.md.

    import daydream, restructure_bn
    graph = daydream.load("trace.json.gz")
    restructure_bn.apply(graph)
"""

import bisect

from twin_support import UnitTasks

NAME = "restructure_bn"
CASES = {"bn_factor=0.5": {"bn_factor": 0.5}}
BATCH_NORM = "(?i)bn_fw|bn_bw|batch_?norm"
BATCH_NORM_BACKWARD = "(?i)bn_bw|batch_?norm.*(backward|bwd)"
RELU, ADD = "(?i)relu|clamp_min|clamp_scalar|threshold", "(?i)AddFunctor|CUDAFunctor_add|add_kernel"
NOT_ELEMENTWISE = "(?i)gemm|conv|scudnn|winograd|<(long|int|bool)"  # conv kernels say "relu" too
FUSED_OPERATORS = "(?i)relu|threshold|clamp|add"
REACH = 2  # kernels examined after a BN forward / before a BN backward kernel


def _runs(graph, batch_norm, backward):
    """The fusable kernels next to each BatchNorm kernel, in stream order."""
    free = {"forward": {t.id for t in graph.select(kind="kernel", name=[RELU, ADD], name_not=NOT_ELEMENTWISE)},
            "backward": {t.id for t in graph.select(kind="kernel", name=RELU, name_not=NOT_ELEMENTWISE)}}
    runs = []
    for bn in batch_norm:
        forward = bn.id not in backward
        step = graph.chain_next if forward else graph.chain_prev
        run, t = [], step(bn)
        while len(run) < REACH and t is not None and t.id in free["forward" if forward else "backward"]:
            run.append(t)
            free["forward"].discard(t.id), free["backward"].discard(t.id)
            t = step(t)
        if run:
            runs.append(run if forward else run[::-1])
    return runs


def _cpu_work(graph, removed):
    """Per launch call of a removed kernel: its outermost fused operator's tasks, or the call alone."""
    windows = {}  # per thread: (start, end) of the outermost fused operators, by start
    for unit, start, end in graph.range_windows(FUSED_OPERATORS):
        windows.setdefault(unit, []).append((start, end))
    only_removed = lambda t: all(g.id in removed for g in graph.launched_by(t))  # noqa: E731
    units = UnitTasks(graph)
    taken, blocks = set(), []
    for k in sorted(removed):
        call = graph.predecessor(k, "launch")
        if call is None or call.id in taken or not only_removed(call):
            continue
        around = windows.get(call.unit, [])
        i = bisect.bisect_right(around, (call.recorded_start_ns, float("inf"))) - 1
        start, end = around[i] if i >= 0 else (0, 0)
        inside = start <= call.recorded_start_ns < end
        block = units.starting_in(call.unit, start, end) if inside else []  # the operator's tasks on its thread
        if not block or any(t.id in taken or t.blocking or not only_removed(t) for t in block):
            block = [call]
        taken.update(t.id for t in block)
        blocks.append(block)
    return blocks


def _remove_run(graph, run):
    """The stream goes on after the kernel before the run with the gap the next kernel had after it."""
    before, after = graph.chain_prev(run[0]), graph.chain_next(run[-1])
    gap = next((delay for p, _, delay in graph.in_edges(after) if p == run[-1]), 0) if after else 0
    graph.remove_block(run)
    if before is not None and after is not None:
        graph.set_delay(before, after, gap)


def apply(graph, bn_factor: float = 0.75) -> None:
    batch_norm = graph.select(kind="kernel", name=BATCH_NORM)
    if not len(batch_norm):
        raise ValueError(f"the trace has no BatchNorm kernel (no kernel name matches '{BATCH_NORM}')")
    backward = {t.id for t in batch_norm.filter(name=BATCH_NORM_BACKWARD)}
    runs = _runs(graph, batch_norm, backward)
    for block in _cpu_work(graph, {k.id for run in runs for k in run}):
        graph.remove_block(block)
    for run in runs:
        _remove_run(graph, run)
    batch_norm.scale(bn_factor)
