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

from twin_support import llround

NAME = "fused_adam"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"kernels=4,factor=0.5": {"kernels": 4, "factor": 0.5}}


def _collect_step(graph, step_tasks):
    """The step's CPU tasks that launch only kernels/memsets (or nothing, without waiting), and
    those kernels per stream id, in recorded order; blocking calls, copies and collectives stay."""
    cpu = [task for task in step_tasks if graph.gpu_use(task) in ("none", "kernels")]
    return cpu, graph.group_by_unit(graph.launched_by(cpu))


def _update(name, kind, duration_ns, iteration):
    return {"name": name, "kind": kind, "duration_ns": duration_ns, "iteration": iteration, "phase": "update"}


def _fused_work(graph, cpu, kernels, factor, count, launch_ns):
    """Per stream, `count` fused kernels lasting together factor x the removed ones; on the thread,
    per fused kernel one framework call (the median CPU segment) and one launch call."""
    segments = [t.duration_ns for t in cpu if t.kind == "cpu"]
    framework_ns = statistics.median_high(segments) if segments else 0
    calls = {"unit": cpu[0].unit, "tasks": [], "gap_ns": 0, "take_over_edges": False}
    work = [calls]
    for stream, tasks in kernels.items():
        fused_ns = llround(sum(k.duration_ns for k in tasks) * factor)
        fused = [fused_ns * (j + 1) // count - fused_ns * j // count for j in range(count)]  # add up to fused_ns
        work.append({"unit": stream, "gap_ns": graph.calibration["gpu_gap_ns"], "take_over_edges": True,
                     "tasks": [_update("fused_optimizer_kernel (multi_tensor_apply)", "kernel", ns, tasks[0].iteration)
                               for ns in fused]})
        for _ in range(count):
            if framework_ns > 0:
                calls["tasks"].append(_update("fused optimizer step", "cpu", framework_ns, cpu[0].iteration))
            calls["tasks"].append(_update("cudaLaunchKernel (fused optimizer)", "runtime", launch_ns, cpu[0].iteration))
    return work


def _fuse_step(graph, cpu, kernels, factor, count, launch_ns):
    block = list(cpu) + [k for tasks in kernels.values() for k in tasks]
    calls, *streams = graph.replace_block(block, _fused_work(graph, cpu, kernels, factor, count, launch_ns))
    launches = iter(c for c in calls if c.kind == "runtime")  # kernel i is launched by launch call i
    for fused in streams:
        for kernel in fused:
            graph.connect_launch(next(launches), kernel)


def apply(graph, factor: float = 1.0, kernels: int = 1, step: str = r"Optimizer\.step") -> None:
    """Changes `graph` in place; daydream.Error-like ValueError when there is nothing to fuse."""
    windows = graph.range_tasks(step)
    if not windows.windows:
        raise ValueError(f"the trace has no optimizer step (no CPU range matches '{step}')")
    launch_ns = graph.median_launch_call_ns()
    steps = [_collect_step(graph, windows.tasks(window)) for window in windows.windows]  # all read before any change
    steps = [(cpu, found) for cpu, found in steps if found]
    if not steps:
        raise ValueError(f"none of the trace's {len(windows.windows)} optimizer steps launched a kernel")
    for cpu, found in steps:
        _fuse_step(graph, cpu, found, factor, kernels, launch_ns)
