"""amp in Python: the twin of the built-in (scenarios/amp.cpp; scenarios/examples/amp.py is the
paper's plain estimate). On the GPU model (the trace's GPU known to the catalogue, no fixed factor
given): each kernel outside the optimizer step and the data pipeline takes its time times
daydream.autocast_time_ratio (peak ratios at the new precision, half the bytes), never below the
trace's shortest kernel, except those autocast runs in fp32 (daydream.autocast_fp32); with fp16,
GradScaler's step waits for the backward pass on the GPU.
Otherwise the paper's factors: tensor-core kernels 1/tensor_core, every other kernel 1/other.
Then autocast's weight casts: one cast kernel per run of GEMM or convolution kernels of a forward
operator, before the run's first kernel, launched by one more call before that kernel's call. docs/scenarios/amp.md.

    import daydream, autocast_amp
    graph = daydream.load("trace.json.gz")
    autocast_amp.apply(graph)
"""

import math

import daydream

NAME = "amp"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"casts=0": {"casts": 0}, "tensor_core=8,other=1.5": {"tensor_core": 8.0, "other": 1.5},
         "dtype=bf16,device=A100-SXM4-40GB": {"dtype": "bf16", "device": "A100-SXM4-40GB"},
         "grad_scaler=1,device=V100-SXM2-32GB": {"grad_scaler": 1, "device": "V100-SXM2-32GB"}}
TENSOR_CORE = "(?i)^[^(]*(gemm|conv|wgrad|dgrad|fprop|cutlass|xmma|scudnn|[sh](884|1688|16816))"
NOT_TENSOR_CORE = "(?i)^[^(]*(offsets|reduce|winogradtiles|winograd_nonfused)"


def _tensor_core(graph, pattern, exclude, where=lambda t: True):
    """Kernels `pattern` names and `exclude` (when not empty) does not."""
    return graph.select(where, kind="kernel", name=pattern, **({"name_not": exclude} if exclude else {}))


def _all_but(graph, tensor_core, where=lambda t: True, **filters):
    ids = set(tensor_core.ids)
    return graph.select(lambda t: where(t) and t.id not in ids, kind="kernel", **filters)


def _cast_kernel_ns(graph):
    """The median elementwise kernel after scaling; any non-tensor-core kernel when there is none."""
    tensor_core = _tensor_core(graph, TENSOR_CORE, NOT_TENSOR_CORE)
    kernels = _all_but(graph, tensor_core, name="(?i)elementwise")
    return (kernels if len(kernels) else _all_but(graph, tensor_core)).median_duration_ns


def _insert_casts(graph, weighted, dtype, cast_ns, launch_call_ns):
    """One cast per run of GEMM or convolution kernels of one forward operator (a run ends at any
    other task on the stream), before the run's first kernel, launched by one more call before that
    kernel's launch call (none when that call starts its thread)."""
    weighted_ids = {kernel.id for kernel in weighted}
    for kernel in weighted:
        if kernel.phase != "forward":
            continue
        before = graph.chain_prev(kernel)
        if before is not None and before.id in weighted_ids and before.op_event == kernel.op_event:
            continue
        call = graph.predecessor(kernel, "launch")
        if call is None:
            continue
        launch = {"name": "cudaLaunchKernel (amp cast)", "kind": "runtime", "duration_ns": launch_call_ns,
                  "iteration": call.iteration, "phase": "forward"}
        cast = {"name": f"amp cast fp32 -> {dtype}", "kind": "kernel", "duration_ns": cast_ns,
                "iteration": kernel.iteration, "phase": "forward"}
        graph.insert_launched(launch, cast, call, kernel)


def _traced_gpu(graph, device, devices):
    """The catalogue name of the traced GPU; None when the catalogue does not know it."""
    if device != "auto":
        return device
    try:
        return graph.traced_gpu(devices)["name"]
    except daydream.Error:
        return None


def _scale_on_device(graph, gpu, dtype, devices):
    """Each model kernel outside the optimizer step as autocast runs it; returns GEMMs and convolutions."""
    kernels = graph.select(kind="kernel")
    floor_ns = min((k.duration_ns for k in kernels if k.duration_ns > 0), default=0)
    weighted = []
    for kernel in graph.select(lambda t: t.phase not in ("data_loading", "update"), kind="kernel"):
        if daydream.autocast_fp32(kernel.name, kernel.op, kernel.phase == "forward"):
            continue  # an operator on autocast's float32 list (or its backward): runs in fp32 as traced
        if daydream.kernel_class(kernel.name)["engine"] != "none":
            weighted.append(kernel)
        ratio = daydream.autocast_time_ratio(kernel.name, gpu, dtype, devices)
        if ratio != 1.0:
            exact = math.floor(kernel.duration_ns * ratio + 0.5)  # half away from zero, as C++ llround
            kernel.duration_ns = max(exact, min(kernel.duration_ns, floor_ns))
    return weighted


def _scaler_syncs(graph):
    """GradScaler: each iteration's optimizer step waits for the GPU task before its first kernel."""
    first = {}
    for kernel in graph.select(kind="kernel", phase="update"):
        if kernel.iteration >= 0 and (kernel.iteration not in first or
                                      kernel.recorded_start_ns < first[kernel.iteration].recorded_start_ns):
            first[kernel.iteration] = kernel
    for iteration, kernel in sorted(first.items()):
        backward_end, call = graph.predecessor(kernel, "gpu_sequential"), graph.predecessor(kernel, "launch")
        if backward_end is None or call is None:
            continue
        step = graph.run_before(call, graph.num_tasks, lambda t: t.phase == "update" and t.iteration == iteration)
        graph.connect(backward_end, step[0] if step else call, "sync")


def apply(graph, dtype: str = "fp16", device: str = "auto", grad_scaler="auto", casts: int = 1, tensor_core="auto",
          other="auto", pattern: str = TENSOR_CORE, exclude: str = NOT_TENSOR_CORE, devices: str = "") -> None:
    if dtype not in ("fp16", "bf16"):
        raise ValueError(f"amp: dtype '{dtype}' is not one autocast runs in (valid: fp16, bf16)")
    devices = devices or None
    launch_call_ns = graph.median_launch_call_ns()
    fixed = tensor_core != "auto" or other != "auto" or pattern != TENSOR_CORE or exclude != NOT_TENSOR_CORE
    gpu = None if fixed else _traced_gpu(graph, device, devices)
    if gpu is not None:
        weighted = _scale_on_device(graph, gpu, dtype, devices)
    else:
        model = lambda t: t.phase != "data_loading"  # noqa: E731  (a DALI/DataLoader kernel keeps its time)
        weighted = _tensor_core(graph, pattern, exclude, model)
        _all_but(graph, weighted, model).scale(1.0 / (2.0 if other == "auto" else other))
        weighted.scale(1.0 / (3.0 if tensor_core == "auto" else tensor_core))
    if grad_scaler == 1 or (grad_scaler == "auto" and gpu is not None and dtype == "fp16"):
        _scaler_syncs(graph)
    if casts == 0 or not len(graph.select(phase="forward")):
        return
    _insert_casts(graph, weighted, dtype, _cast_kernel_ns(graph), launch_call_ns)
