"""pinned_memory in Python: the twin of the built-in (scenarios/pinned_memory.cpp). Host-to-device
copies from pageable memory become pinned and non-blocking: bytes / bandwidth where the size is
known, the calibrated memcpy launch latency (no staging), a copy call no longer than the median
launch call, and (non_blocking=1) the copy's own operator no longer synchronises the stream.
docs/scenarios/pinned_memory.md.

    import daydream, pinned_memory
    graph = daydream.load("trace.json.gz")
    pinned_memory.apply(graph)
"""

from twin_support import llround

NAME = "pinned_memory"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"non_blocking=0,bandwidth=24GB/s": {"non_blocking": 0, "bandwidth": 24e9}}


def _own_synchronisations(graph, copy, call):
    """The blocking calls of the copy's own operator (aten::copy_'s stream sync) that wait for it."""
    op = call.op_event
    return [waiter for waiter, edge_type, _ in graph.out_edges(copy)
            if edge_type == "sync" and waiter.blocking and op is not None and waiter.op_event == op]


def _make_pinned(graph, copy, bandwidth, launch_cost_ns, non_blocking):
    if copy.bytes is not None and copy.bytes >= 0:
        copy.duration_ns = llround(copy.bytes / bandwidth * 1e9)
    call = graph.predecessor(copy, "launch")
    if call is None:
        return  # launched before profiling began: only its duration changes
    graph.set_delay(call, copy, graph.calibration["launch_latency_ns"]["memcpy"])
    call.duration_ns = min(call.duration_ns, launch_cost_ns)
    if non_blocking:
        for waiter in _own_synchronisations(graph, copy, call):
            graph.disconnect(copy, waiter)  # the wait goes first: removing the call alone would bridge it
            graph.remove(waiter)


def apply(graph, bandwidth: float = 12e9, non_blocking: int = 1) -> None:
    launch_cost_ns = graph.median_launch_call_ns()
    for copy in graph.select(kind="memcpy", name="HtoD", name_not="Pinned"):
        _make_pinned(graph, copy, bandwidth, launch_cost_ns, non_blocking)
