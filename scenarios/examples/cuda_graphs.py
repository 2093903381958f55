"""cuda_graphs in Python: the twin of the built-in (scenarios/cuda_graphs.cpp). The step captured
once and replayed as CUDA graphs: per occurrence of the `region` range, the CPU work on every
operator thread of its process (and rank) is captured (not data loading, waits without a launch,
or launches of host copies); each stretch between those becomes one graph, one cudaGraphLaunch
(`launch` ns) in its place launching each stream's first task; inside a graph a stream runs back
to back; a launch waits for the graph its thread launched `in_flight` launches earlier.
docs/scenarios/cuda_graphs.md.

    import daydream, cuda_graphs
    graph = daydream.load("trace.json.gz")
    cuda_graphs.apply(graph)
"""

import bisect

NAME = "cuda_graphs"
CASES = {"in_flight=3,launch=5us": {"in_flight": 3, "launch": 5000.0}}


def _left_out(graph, t):
    """Outside the capture: data loading, a wait without a launch, a launch of a host copy."""
    return t.phase == "data_loading" or graph.gpu_use(t) in ("wait", "host_copy")


def _pieces(graph, regions, window):
    """The region's stretches on its thread, cut at each task left out; other operator threads'
    captured tasks join the piece running when they start (the first one before it)."""
    pieces, starts, open_ = [], [], False
    for t in regions.tasks(window):
        cut = _left_out(graph, t)
        if not cut and not open_:
            pieces.append([])
            starts.append(t.recorded_start_ns)
        if not cut:
            pieces[-1].append(t)
        open_ = not cut
    home = graph.unit_info(window[0])
    for unit in range(len(graph.units)):
        info = graph.unit_info(unit)
        if not pieces or info["name"] == window[0] or info["kind"] != "cpu_thread" or info["background"]:
            continue
        if (info["rank"], info["process"]) != (home["rank"], home["process"]):
            continue  # a graph holds one process's work
        for t in regions.tasks(window, unit):
            if not _left_out(graph, t):
                pieces[max(0, bisect.bisect_right(starts, t.recorded_start_ns) - 1)].append(t)
    return pieces


def _capture(graph, piece, launch_ns):
    """One graph: the piece's CPU work removed (queue waits kept as zero-time points), one launch."""
    streams = graph.group_by_unit(graph.launched_by(piece))
    if not streams:
        return None
    waits = [t for t in piece if graph.waits_for_gpu(t)]  # waited for a full launch queue
    block = [t for t in piece if t not in waits]
    anchor = piece[0]
    graph.zero_inner_delays(piece)  # the gaps inside the captured work go with it
    spot = graph.chain_spot(anchor, block)  # right before the anchor when it is a kept wait
    graph.remove_block(block)
    for t in waits:
        t.duration_ns = 0
        t.rename("launch-queue wait (captured by cuda_graphs)")
    task = {"name": "cudaGraphLaunch", "kind": "runtime", "duration_ns": int(launch_ns),
            "iteration": anchor.iteration, "phase": anchor.phase}
    call = graph.insert_between(task, anchor.unit_id, **spot)
    return call, graph.launch_graph(call, streams)  # each stream's first task; inside, back to back


def apply(graph, region: str = "ProfilerStep#", launch: float = 10000.0, in_flight: int = 1) -> None:
    regions = graph.range_tasks(region)
    if not regions.windows:
        raise ValueError(f"no CPU range of the trace matches region '{region}'")
    graphs = []
    for window in regions.windows:
        for piece in _pieces(graph, regions, window):
            captured = _capture(graph, piece, launch)
            if captured:
                graphs.append(captured)
    if not graphs:
        raise ValueError(f"the {len(regions.windows)} occurrences of region '{region}' launch no GPU work to capture")
    by_thread = {}  # each thread's launch queue: a launch waits for its graph in_flight launches earlier
    for captured in graphs:
        by_thread.setdefault(captured[0].unit_id, []).append(captured)
    for launched in by_thread.values():
        for j in range(in_flight, len(launched)):
            for tail in launched[j - in_flight][1]:
                graph.connect(tail, launched[j][0], "sync")
            launched[j][0].blocking = True
