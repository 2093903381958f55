"""cuda_graphs in Python: the twin of the built-in (scenarios/cuda_graphs.cpp). The step captured
once and replayed as CUDA graphs: per occurrence of the `region` range, the CPU work on every
operator thread is captured (not data loading, waits without a launch, or launches of host
copies); each stretch between those becomes one graph, one cudaGraphLaunch (`launch` ns) in its
place launching each stream's first task; inside a graph a stream runs back to back; a launch
waits for the graph `in_flight` launches earlier. docs/scenarios/cuda_graphs.md.

    import daydream, cuda_graphs
    graph = daydream.load("trace.json.gz")
    cuda_graphs.apply(graph)
"""

import bisect

from twin_support import UnitTasks

NAME = "cuda_graphs"
CASES = {"in_flight=3,launch=5us": {"in_flight": 3, "launch": 5000.0}}


def _left_out(graph, t):
    """Outside the capture: data loading, a wait without a launch, a launch of a host copy."""
    if t.phase == "data_loading":
        return True
    launched = graph.launched_by(t)
    if not launched and t.blocking:
        return True
    device = ("DtoD", "Device -> Device", "PtoP")
    return any(g.kind == "memcpy" and not any(d in g.name for d in device) for g in launched)


def _pieces(graph, thread, start, end, units):
    """The region's stretches on its thread, cut at each task left out; other operator threads'
    captured tasks join the piece running when they start (the first one before it)."""
    pieces, open_ = [], False
    for t in units.starting_in(thread, start, end):
        if t.removed:
            continue
        if _left_out(graph, t):
            open_ = False
            continue
        if not open_:
            pieces.append({"cpu": [], "start": t.recorded_start_ns})
        open_ = True
        pieces[-1]["cpu"].append(t)
    piece_starts = [p["start"] for p in pieces]
    for unit in units.by_unit:
        info = graph.unit_info(unit)
        if not pieces or unit == thread or info["kind"] != "cpu_thread" or info["background"]:
            continue
        for t in units.starting_in(unit, start, end):
            if not t.removed and not _left_out(graph, t):
                pieces[max(0, bisect.bisect_right(piece_starts, t.recorded_start_ns) - 1)]["cpu"].append(t)
    return pieces


def _capture(graph, piece, launch_ns, streams):
    """One graph: the piece's CPU work removed (queue waits kept as zero-time points), one launch."""
    work = [g for call in piece["cpu"] for g in graph.launched_by(call)]
    if not work:
        return None
    first, last = {}, {}
    for g in work:
        key = (g.recorded_start_ns, g.id)
        if g.unit_id not in first or key < (first[g.unit_id].recorded_start_ns, first[g.unit_id].id):
            first[g.unit_id] = g
        if g.unit_id not in last or (last[g.unit_id].recorded_start_ns, last[g.unit_id].id) < key:
            last[g.unit_id] = g
    anchor, members = piece["cpu"][0], {t.id for t in piece["cpu"]}
    queue_waits = [t for t in piece["cpu"]
                   if any(p.unit_id in streams for p, _, _ in graph.in_edges(t))]  # waited for a full launch queue
    block = [t for t in piece["cpu"] if t not in queue_waits]
    for t in piece["cpu"]:  # the gaps inside the captured work go with it
        for s, _, _ in graph.out_edges(t):
            if s.id in members:
                graph.set_delay(t, s, 0)
    if anchor in block:
        spot = graph.chain_spot(anchor, block)
    else:  # the anchor is a kept queue wait: the launch goes right before it
        sequential = [(p, delay) for p, kind, delay in graph.in_edges(anchor) if kind == "cpu_sequential"]
        prev, delay = sequential[-1] if sequential else (None, 0)
        spot = {"prev": prev, "delay_in_ns": delay, "next": anchor, "delay_out_ns": 0, "release_ns": anchor.release_ns}
    graph.remove_block(block)
    for t in queue_waits:
        t.duration_ns = 0
        t.rename("launch-queue wait (captured by cuda_graphs)")
    task = {"name": "cudaGraphLaunch", "kind": "runtime", "duration_ns": int(launch_ns),
            "iteration": anchor.iteration, "phase": anchor.phase}
    call = graph.insert_between(task, anchor.unit_id, spot["prev"], spot["next"], spot["delay_in_ns"],
                                spot["delay_out_ns"], spot["release_ns"])
    latency = graph.calibration["launch_latency_ns"]
    for _, root in sorted(first.items()):  # by stream id
        edge = "communication" if root.kind == "communication" else "launch"
        graph.connect(call, root, edge, delay_ns=latency[root.kind], timing="start_to_start")
    in_graph = {g.id for g in work}
    for g in work:  # inside the graph a stream runs back to back
        for p, kind, _ in graph.in_edges(g):
            if kind == "gpu_sequential" and p.id in in_graph and p.unit_id == g.unit_id:
                graph.set_delay(p, g, graph.calibration["gpu_gap_ns"])
    return call, [tail for _, tail in sorted(last.items())]


def apply(graph, region: str = "ProfilerStep#", launch: float = 10000.0, in_flight: int = 1) -> None:
    windows = graph.range_windows(region)
    if not windows:
        raise ValueError(f"no CPU range of the trace matches region '{region}'")
    units = UnitTasks(graph)
    streams = {u for u in range(len(graph.units)) if graph.unit_info(u)["kind"] == "gpu_stream"}
    graphs = []
    for thread, start, end in windows:
        for piece in _pieces(graph, thread, start, end, units):
            captured = _capture(graph, piece, launch, streams)
            if captured:
                graphs.append(captured)
    if not graphs:
        raise ValueError(f"the {len(windows)} occurrences of region '{region}' launch no GPU work to capture")
    for j in range(in_flight, len(graphs)):  # a launch waits for the graph in_flight launches earlier
        for tail in graphs[j - in_flight][1]:
            graph.connect(tail, graphs[j][0], "sync")
        graphs[j][0].blocking = True
