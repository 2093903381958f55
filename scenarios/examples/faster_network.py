"""faster_network in Python: the twin of the built-in (scenarios/faster.cpp). Every
communication task takes duration / factor; or, with `bandwidth` (bytes/s) given, bytes /
bandwidth for each one whose size the trace records. docs/scenarios/faster_network.md.

    import daydream, faster_network
    graph = daydream.load("trace.json.gz")
    faster_network.apply(graph, bandwidth=12.5e9)  # 100 Gbps
"""

from twin_support import llround

NAME = "faster_network"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"bandwidth=100Gbps": {"bandwidth": 12.5e9}, "factor=4": {"factor": 4.0}}


def apply(graph, factor: float = 2.0, bandwidth="auto") -> None:
    comms = graph.select(kind="communication")
    if bandwidth == "auto":
        comms.scale(1.0 / factor)
        return
    sized = [t for t in comms if t.bytes is not None and t.bytes >= 0]
    if not sized:
        raise ValueError("parameter 'bandwidth' needs communication tasks with a known size (bytes)")
    for task in sized:
        task.duration_ns = llround(task.bytes / bandwidth * 1e9)
