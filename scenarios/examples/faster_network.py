"""faster_network in Python: the twin of the built-in (scenarios/faster.cpp). Every
communication task takes duration / factor; or, with `bandwidth` (bytes/s) given, bytes /
bandwidth for each one of known size: its own recorded size, else the size ddp gives a traced
all-reduce (its record_param_comms range's bytes, or the model's gradient bytes from params or
param_file spread over each iteration's all-reduces). docs/scenarios/faster_network.md.

    import daydream, faster_network
    graph = daydream.load("trace.json.gz")
    faster_network.apply(graph, bandwidth=12.5e9)  # 100 Gbps
"""

from ddp import given_total_bytes
from twin_support import llround

NAME = "faster_network"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"bandwidth=100Gbps": {"bandwidth": 12.5e9}, "factor=4": {"factor": 4.0},
         "bandwidth=10Gbps,params=25.6e6": {"bandwidth": 1.25e9, "params": 25.6e6}}


def apply(graph, factor: float = 2.0, bandwidth="auto", params="auto", bytes_per_param: float = 4.0,
          param_file: str = "") -> None:
    comms = graph.select(kind="communication")
    if bandwidth == "auto":
        comms.scale(1.0 / factor)
        return
    sizes = {t.id: t.bytes for t in comms if t.bytes is not None and t.bytes >= 0}
    traced = graph.traced_allreduce_sizes(graph.trace_collectives(),
                                          given_total_bytes(params, bytes_per_param, param_file))
    for task, size in traced["bytes"].items():
        sizes.setdefault(task.id, size)
    if not sizes:
        raise ValueError("parameter 'bandwidth' needs communication tasks of known size")
    for task_id, size in sizes.items():
        graph.task(task_id).duration_ns = llround(size / bandwidth * 1e9)
