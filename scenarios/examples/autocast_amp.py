"""amp in Python: the twin of the built-in (scenarios/amp.cpp; scenarios/examples/amp.py is the
paper's plain estimate). Tensor-core kernels take 1/tensor_core of their time, every other kernel
1/other, except a data pipeline's (autocast is thread-local to the training loop); then autocast's
fp32 -> fp16 weight casts: one cast kernel per forward operator, before its first tensor-core
kernel, launched by one more call before that kernel's call. docs/scenarios/amp.md.

    import daydream, autocast_amp
    graph = daydream.load("trace.json.gz")
    autocast_amp.apply(graph)
"""

import statistics

NAME = "amp"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"casts=0": {"casts": 0}, "tensor_core=8,other=1.5": {"tensor_core": 8.0, "other": 1.5}}
TENSOR_CORE = ("(?i)^(?![^(]*(offsets|reduce|winogradtiles|winograd_nonfused))"
               "[^(]*(gemm|conv|wgrad|dgrad|fprop|cutlass|xmma|scudnn|[sh](884|1688|16816))")


def _median(tasks):
    return statistics.median_high([t.duration_ns for t in tasks]) if len(tasks) else 0


def _insert_cast(graph, kernel, call, cost):
    """A cast kernel before `kernel` on its stream, launched by a new call before `call`."""
    cpu_before = graph.predecessor(call, "cpu_sequential")
    if cpu_before is None:
        return False
    gpu_before = graph.predecessor(kernel, "gpu_sequential")
    launch = graph.insert("cudaLaunchKernel (amp cast)", cost["launch_call_ns"], call.unit_id, kind="runtime",
                          after=[cpu_before], before=[call], iteration=call.iteration, phase="forward")
    cast = graph.insert("amp cast fp32 -> fp16", cost["gpu_ns"], kernel.unit_id, kind="kernel",
                        after=[gpu_before] if gpu_before else [], before=[kernel],
                        before_delay_ns=cost["stream_gap_ns"], iteration=kernel.iteration, phase="forward")
    graph.connect(launch, cast, "launch", delay_ns=cost["launch_latency_ns"], timing="start_to_start")
    return True


def apply(graph, tensor_core: float = 3.0, other: float = 2.0, casts: int = 1, pattern: str = TENSOR_CORE) -> None:
    launch_call_ns = graph.median_launch_call_ns()
    model = lambda t: t.phase != "data_loading"  # noqa: E731  (a DALI/DataLoader kernel keeps its time)
    fast = graph.select(model, kind="kernel", name=pattern)
    rest = graph.select(model, kind="kernel", name_not=pattern)
    fast.scale(1.0 / tensor_core)
    rest.scale(1.0 / other)
    if casts == 0 or not len(graph.select(phase="forward")):
        return
    elementwise = graph.select(kind="kernel", name="(?i)elementwise", name_not=pattern)
    calibration = graph.calibration
    cost = {"gpu_ns": _median(elementwise if len(elementwise) else graph.select(kind="kernel", name_not=pattern)),
            "launch_call_ns": launch_call_ns, "launch_latency_ns": calibration["launch_latency_ns"]["kernel"],
            "stream_gap_ns": calibration["gpu_gap_ns"]}
    operators_done = set()
    for kernel in fast:
        if kernel.phase != "forward":
            continue
        if kernel.op_event is not None:
            if kernel.op_event in operators_done:
                continue
            operators_done.add(kernel.op_event)
        call = graph.predecessor(kernel, "launch")
        if call is not None:
            _insert_cast(graph, kernel, call, cost)
