"""daydream: what-if analysis of deep-learning training performance from one profile.

Load a PyTorch profiler (Kineto) trace into a task dependency graph, change a copy of the graph
the way an optimization would, and simulate it to predict the new iteration time::

    import daydream

    graph = daydream.load("trace.json.gz")
    faster = graph.copy()
    faster.select(kind="kernel").scale(0.5)          # GPU kernels twice as fast
    print(graph.simulate().iteration_times_ms, faster.simulate().iteration_times_ms)

or with the library's scenarios (daydream.scenarios() lists them)::

    print(daydream.predict(graph, "faster_gpu:factor=2").speedup)
    frame = daydream.sweep(graph, ["amp", "faster_gpu:factor=1.5|2|4"])

and check a prediction against a measured run (predict AFTER from BEFORE, compare)::

    frame = daydream.validate("before.json.gz", "after.json.gz", "amp")
    print(frame.attrs["error"]["mean"])

and see where each kernel class, operator and layer sits on the GPU's roofline::

    report = daydream.roofline(graph)               # DataFrames: classes, operators, layers, expected
    daydream.plot_roofline(report)

See docs/python.md for the whole API; daydream.plot draws sweeps, timelines and rooflines (matplotlib).
"""

import sys as _sys

from ._core import (
    EDGE_TYPES,
    PHASES,
    TASK_KINDS,
    UNIT_KINDS,
    BackwardPass,
    Error,
    Graph,
    LaunchIndex,
    Prediction,
    RangeTasks,
    Result,
    RingCost,
    Task,
    TaskSet,
    TraceCollectives,
    TracedPass,
    __version__,
    apply_scenario,
    autocast_fp32,
    autocast_time_ratio,
    collective_traffic_bytes,
    collector,
    describe,
    estimate_loads,
    fit_link,
    gpus,
    kernel_class,
    load,
    ns_per_byte,
    predict,
    prices,
    recorded_first_starts,
    read_parameter_counts,
    run_cost,
    scenarios,
    write_timeline,
)
from . import plot
from ._bottleneck import Bottleneck, bottleneck
from ._roofline import Roofline, roofline
from .plot import plot_roofline
from ._sweep import MAX_SPECS, sweep
from ._validate import validate

Error.__module__ = "daydream"

# daydream.collector.start()/stop()/flush() (the injected CUPTI collector, docs/collector.md) is a
# submodule of _core; registered so that `import daydream.collector` works too.
_sys.modules[__name__ + ".collector"] = collector


def _collector_library_path():
    """The CUPTI collector that came with this package (daydream/lib/libdaydream_cupti.so), for
    CUDA_INJECTION64_PATH; None where the package was built without CUPTI."""
    import pathlib

    path = pathlib.Path(__file__).resolve().parent / "lib" / "libdaydream_cupti.so"
    return str(path) if path.is_file() else None


collector.library_path = _collector_library_path

__all__ = [
    "EDGE_TYPES",
    "MAX_SPECS",
    "PHASES",
    "TASK_KINDS",
    "UNIT_KINDS",
    "BackwardPass",
    "Bottleneck",
    "Error",
    "Graph",
    "LaunchIndex",
    "Prediction",
    "RangeTasks",
    "Result",
    "Roofline",
    "RingCost",
    "Task",
    "TaskSet",
    "TraceCollectives",
    "TracedPass",
    "__version__",
    "apply_scenario",
    "autocast_fp32",
    "autocast_time_ratio",
    "bottleneck",
    "collective_traffic_bytes",
    "describe",
    "estimate_loads",
    "fit_link",
    "gpus",
    "kernel_class",
    "load",
    "ns_per_byte",
    "plot_roofline",
    "predict",
    "prices",
    "recorded_first_starts",
    "read_parameter_counts",
    "roofline",
    "run_cost",
    "scenarios",
    "sweep",
    "validate",
    "write_timeline",
]
