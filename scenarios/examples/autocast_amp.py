"""amp in Python: the twin of the built-in (scenarios/amp.cpp; scenarios/examples/amp.py is the
paper's plain estimate). Tensor-core kernels take 1/tensor_core of their time, every other kernel
1/other, except a data pipeline's (autocast is thread-local to the training loop); then autocast's
fp32 -> fp16 weight casts: one cast kernel per forward operator, before its first tensor-core
kernel, launched by one more call before that kernel's call. docs/scenarios/amp.md.

    import daydream, autocast_amp
    graph = daydream.load("trace.json.gz")
    autocast_amp.apply(graph)
"""

NAME = "amp"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"casts=0": {"casts": 0}, "tensor_core=8,other=1.5": {"tensor_core": 8.0, "other": 1.5}}
TENSOR_CORE = ("(?i)^(?![^(]*(offsets|reduce|winogradtiles|winograd_nonfused))"
               "[^(]*(gemm|conv|wgrad|dgrad|fprop|cutlass|xmma|scudnn|[sh](884|1688|16816))")


def _cast_kernel_ns(graph, pattern):
    """The median elementwise kernel after scaling; any non-tensor-core kernel when there is none."""
    kernels = graph.select(kind="kernel", name="(?i)elementwise", name_not=pattern)
    return (kernels if len(kernels) else graph.select(kind="kernel", name_not=pattern)).median_duration_ns


def _insert_casts(graph, tensor_core, cast_ns, launch_call_ns):
    """One cast per forward operator, before its first tensor-core kernel on its stream, launched by
    one more call before that kernel's launch call (none when that call starts its thread)."""
    operators_done = set()
    for kernel in tensor_core:
        if kernel.phase != "forward":
            continue
        if kernel.op_event is not None:
            if kernel.op_event in operators_done:
                continue
            operators_done.add(kernel.op_event)
        call = graph.predecessor(kernel, "launch")
        if call is None:
            continue
        launch = {"name": "cudaLaunchKernel (amp cast)", "kind": "runtime", "duration_ns": launch_call_ns,
                  "iteration": call.iteration, "phase": "forward"}
        cast = {"name": "amp cast fp32 -> fp16", "kind": "kernel", "duration_ns": cast_ns,
                "iteration": kernel.iteration, "phase": "forward"}
        graph.insert_launched(launch, cast, call, kernel)


def apply(graph, tensor_core: float = 3.0, other: float = 2.0, casts: int = 1, pattern: str = TENSOR_CORE) -> None:
    launch_call_ns = graph.median_launch_call_ns()
    model = lambda t: t.phase != "data_loading"  # noqa: E731  (a DALI/DataLoader kernel keeps its time)
    fast = graph.select(model, kind="kernel", name=pattern)
    rest = graph.select(model, kind="kernel", name_not=pattern)
    fast.scale(1.0 / tensor_core)
    rest.scale(1.0 / other)
    if casts == 0 or not len(graph.select(phase="forward")):
        return
    _insert_casts(graph, fast, _cast_kernel_ns(graph, pattern), launch_call_ns)
