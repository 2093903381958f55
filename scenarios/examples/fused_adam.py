"""fused_adam in Python: the twin of scenarios/fused_adam.cpp, written over the public
primitives (tests/python/test_scenario_twins.py checks that both predict the same, to the ns).

Per optimizer step (each CPU range the `step` pattern names), the kernels and memsets its calls
launched, those calls and the rest of the step's CPU work become, in their place: per stream,
`kernels` fused kernels lasting together factor x the removed kernels' time (taking over their
other dependencies); on the step's thread, per fused kernel one framework call (the step's median
CPU segment) and one launch call (the trace's median). docs/scenarios/fused_adam.md.

    import daydream, fused_adam
    graph = daydream.load("trace.json.gz")
    fused_adam.apply(graph)
    print(graph.simulate().iteration_times_ms)
"""

import statistics

from twin_support import UnitTasks, llround

NAME = "fused_adam"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"kernels=4,factor=0.5": {"kernels": 4, "factor": 0.5}}


def _collect_step(graph, step_tasks):
    """The step's CPU tasks that launch only kernels/memsets (or nothing, without blocking), and
    those kernels per stream id, in recorded order."""
    cpu, kernels = [], {}
    for task in step_tasks:
        launched = graph.launched_by(task)
        if any(g.kind not in ("kernel", "memset") for g in launched) or (not launched and task.blocking):
            continue  # blocking calls, copies and collectives stay
        cpu.append(task)
        for g in launched:
            kernels.setdefault(g.unit_id, []).append(g)
    for tasks in kernels.values():
        tasks.sort(key=lambda g: (g.recorded_start_ns, g.id))
    return cpu, dict(sorted(kernels.items()))


def _update(name, kind, duration_ns, iteration):
    return {"name": name, "kind": kind, "duration_ns": duration_ns, "iteration": iteration, "phase": "update"}


def _fused_calls(cpu, count, launch_ns):
    segments = [t.duration_ns for t in cpu if t.kind == "cpu"]
    framework_ns = statistics.median_high(segments) if segments else 0
    first = cpu[0]
    tasks = []
    for _ in range(count):
        if framework_ns > 0:
            tasks.append(_update("fused optimizer step", "cpu", framework_ns, first.iteration))
        tasks.append(_update("cudaLaunchKernel (fused optimizer)", "runtime", launch_ns, first.iteration))
    return {"unit": first.unit, "tasks": tasks, "gap_ns": 0, "take_over_edges": False}


def _fused_kernels(graph, stream, kernels, factor, count):
    fused_ns = llround(sum(k.duration_ns for k in kernels) * factor)
    parts = [fused_ns * (j + 1) // count - fused_ns * j // count for j in range(count)]
    tasks = [_update("fused_optimizer_kernel (multi_tensor_apply)", "kernel", p, kernels[0].iteration) for p in parts]
    return {"unit": stream, "tasks": tasks, "gap_ns": graph.calibration["gpu_gap_ns"], "take_over_edges": True}


def _fuse_step(graph, cpu, kernels, factor, count, launch_ns):
    block = list(cpu) + [k for tasks in kernels.values() for k in tasks]
    replacements = [_fused_calls(cpu, len(kernels) * count, launch_ns)]
    replacements += [_fused_kernels(graph, stream, tasks, factor, count) for stream, tasks in kernels.items()]
    calls, *streams = graph.replace_block(block, replacements)
    group = len(calls) // (len(kernels) * count)  # (framework call, launch call) or (launch call)
    latency = graph.calibration["launch_latency_ns"]["kernel"]
    launches = iter(calls[group - 1 :: group])
    for fused in streams:
        for kernel in fused:
            graph.connect(next(launches), kernel, "launch", delay_ns=latency, timing="start_to_start")


def apply(graph, factor: float = 1.0, kernels: int = 1, step: str = r"Optimizer\.step") -> None:
    """Changes `graph` in place; daydream.Error-like ValueError when there is nothing to fuse."""
    windows = graph.range_windows(step)
    if not windows:
        raise ValueError(f"the trace has no optimizer step (no CPU range matches '{step}')")
    launch_ns = graph.median_launch_call_ns()
    units = UnitTasks(graph)
    steps = [_collect_step(graph, units.starting_in(*window)) for window in windows]  # all read before any change
    steps = [(cpu, found) for cpu, found in steps if found]
    if not steps:
        raise ValueError(f"none of the trace's {len(windows)} optimizer steps launched a kernel")
    for cpu, found in steps:
        _fuse_step(graph, cpu, found, factor, kernels, launch_ns)
