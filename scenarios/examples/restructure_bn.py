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

NAME = "restructure_bn"
CASES = {"bn_factor=0.5": {"bn_factor": 0.5}}
BATCH_NORM = "(?i)bn_fw|bn_bw|batch_?norm"
BATCH_NORM_BACKWARD = "(?i)bn_bw|batch_?norm.*(backward|bwd)"
RELU, ADD = "(?i)relu|clamp_min|clamp_scalar|threshold", "(?i)AddFunctor|CUDAFunctor_add|add_kernel"
NOT_ELEMENTWISE = "(?i)gemm|conv|scudnn|winograd|<(long|int|bool)"  # conv kernels say "relu" too
FUSED_OPERATORS = "(?i)relu|threshold|clamp|add"
REACH = 2  # kernels examined after a BN forward / before a BN backward kernel


def _runs(graph, batch_norm, backward):
    """The fusable kernels next to each BatchNorm kernel, in stream order; a kernel joins one run at most."""
    free = {"forward": {t.id for t in graph.select(kind="kernel", name=[RELU, ADD], name_not=NOT_ELEMENTWISE)},
            "backward": {t.id for t in graph.select(kind="kernel", name=RELU, name_not=NOT_ELEMENTWISE)}}
    runs = []
    for bn in batch_norm:
        fusable = free["backward" if bn.id in backward else "forward"]
        keep = lambda t: t.id in fusable  # noqa: E731
        run = graph.run_before(bn, REACH, keep) if bn.id in backward else graph.run_after(bn, REACH, keep)
        for t in run:
            free["forward"].discard(t.id), free["backward"].discard(t.id)
        if run:
            runs.append(run)
    return runs


def _cpu_work(graph, removed):
    """Per launch call of a removed kernel: its outermost fused operator's tasks, or the call alone."""
    operators = graph.range_tasks(FUSED_OPERATORS)
    only_removed = lambda t: all(g.id in removed for g in graph.launched_by(t))  # noqa: E731
    taken, blocks = set(), []
    for k in sorted(removed):
        call = graph.predecessor(k, "launch")
        if call is None or call.id in taken or not only_removed(call):
            continue
        around = operators.around(call)
        block = operators.tasks(around) if around else []  # the operator's tasks on its thread
        if not block or any(t.id in taken or t.blocking or not only_removed(t) for t in block):
            block = [call]
        taken.update(t.id for t in block)
        blocks.append(block)
    return blocks


def apply(graph, bn_factor: float = 0.75) -> None:
    batch_norm = graph.select(kind="kernel", name=BATCH_NORM)
    if not len(batch_norm):
        raise ValueError(f"the trace has no BatchNorm kernel (no kernel name matches '{BATCH_NORM}')")
    backward = {t.id for t in batch_norm.filter(name=BATCH_NORM_BACKWARD)}
    runs = _runs(graph, batch_norm, backward)
    for block in _cpu_work(graph, {k.id for run in runs for k in run}):
        graph.remove_block(block)
    for run in runs:  # fused into the BatchNorm kernel: no gap of their own
        graph.remove_run(run)
    batch_norm.scale(bn_factor)
