"""dataloader_workers in Python: the twin of the built-in (scenarios/dataloader_workers.cpp).

Model, PyTorch's _MultiProcessingDataLoaderIter with W workers: batch b is loaded by worker b mod W
in a separate process (contention for cores is not modelled); the DataLoader keeps W x prefetch
batches in flight, so a worker receives batch b's indices when the main thread takes batch
b - W x prefetch, and starts it then or when it has finished its previous batch, whichever is later.
The main thread only takes ready batches (`fetch`); when its batch is not ready it waits for the
worker (a cross-thread edge from the worker's load task).

Where the load time per batch comes from:
 - recorded=0 (the trace loaded on the main thread): the length of each DataLoader `__next__` range;
   the first W x prefetch batches are already queued when the profiler window opens.
 - recorded=k > 0: what the main thread's waits imply (daydream.estimate_loads). The recorded
   workers start their first batch when the trace shows, new ones with the earliest of them; other
   threads idle across a whole wait (Graph.idle_across) get an edge from the main thread instead of
   their fixed idle delay. docs/scenarios/dataloader_workers.md.

    import daydream, dataloader_workers
    graph = daydream.load("trace.json.gz")
    dataloader_workers.apply(graph, workers=8)
"""

import daydream

NAME = "dataloader_workers"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {
    "workers=1,prefetch=1,fetch=5us": {"workers": 1, "prefetch": 1, "fetch": 5000.0},
    "workers=2,load=20ms": {"workers": 2, "load": 2e7},
    "recorded=2": {"recorded": 2},
    "recorded=2,workers=0": {"recorded": 2, "workers": 0},
    "recorded=2,workers=1,prefetch=3,fetch=0": {"recorded": 2, "workers": 1, "prefetch": 3, "fetch": 0.0},
    "recorded=1,workers=3,load=300ms": {"recorded": 1, "workers": 3, "load": 3e8},
}


class _Fetch(float):
    """fetch left at its default: 50 us, or with recorded>0 the smallest recorded gap (the built-in's
    fetch when not given)."""


FETCH = _Fetch(50_000.0)


def _require_visible_loading(loads, recorded, load):
    """The trace shows where the main thread loads its batches, or the user says how it was recorded."""
    range_name = loads[0]["name"] if loads else ""
    if recorded > 0 and loads and not loads[0]["in_workers"]:
        raise ValueError(f"the trace's DataLoader loads on the main thread ('{range_name}'): recorded must be 0")
    if recorded == 0 and not loads:
        raise ValueError("no 'enumerate(DataLoader)' ranges in the trace; for a trace recorded with worker "
                         "processes give their number as recorded=<k>")
    if recorded == 0 and loads[0]["in_workers"] and load == "auto":
        raise ValueError(f"the trace's DataLoader already uses worker processes ('{range_name}'): give their "
                         "number as recorded=<k>, or the time to load a batch as load=<duration>")


def _take_ready_batch(graph, loads, take, b, fetch_ns, inline_ns=0):
    """The main thread takes batch b, once it is there, in fetch_ns (plus inline_ns loading it itself).
    Returns the delay from the batch being ready to the take's start."""
    if loads:  # the first task of its DataLoader range, the others emptied
        take["task"].duration_ns = fetch_ns + inline_ns
        take["task"].rename("DataLoader: take a ready batch")
        for task in loads[b]["tasks"][1:]:
            task.duration_ns = 0
        return 0
    if take["wait_from"] is not None:  # the wait before the step
        delay = next(d for t, _, d in graph.out_edges(take["wait_from"]) if t == take["task"])
        graph.set_delay(take["wait_from"], take["task"], fetch_ns + inline_ns if inline_ns > 0 else min(delay, fetch_ns))
    return fetch_ns


def _insert_worker_loads(graph, takes, load_ns, ready_delay_ns, begin_ns, in_flight, first):
    """Worker b mod W loads batch b (from batch `first` on) once the take of batch b - in_flight has freed
    its slot and it has finished its previous batch. begin_ns[w]: when worker w starts its back-to-back
    loads; of a load begun before the trace only its part inside it stays."""
    units = [graph.add_unit(f"DataLoader worker {w}", "cpu_thread", thread=w) for w in range(len(begin_ns))]
    last = [None] * len(units)
    for b in range(first, len(takes)):
        w = b % len(units)
        after = ([takes[b - in_flight]["task"]] if b >= in_flight else []) + ([last[w]] if last[w] is not None else [])
        duration_ns = load_ns[b] if begin_ns[w] >= 0 else max(0, begin_ns[w] + load_ns[b])
        last[w] = graph.insert(f"DataLoader worker: load batch {b}", duration_ns, units[w], kind="cpu", after=after,
                               before=[takes[b]["task"]], before_delay_ns=ready_delay_ns[b],
                               iteration=takes[b]["task"].iteration, phase="data_loading")
        if not after:
            graph.set_release(last[w], max(begin_ns[w], 0))
        begin_ns[w] += load_ns[b]


def _from_main_thread_loading(graph, loads, workers, prefetch, fetch, load):
    """A trace recorded with workers=0: each __next__ range is the main thread loading a batch."""
    if workers == 0:
        return  # batches are loaded on the main thread, as recorded
    takes = graph.batch_takes()
    load_ns = [int(load) if load != "auto" else batch["end_ns"] - batch["start_ns"] for batch in loads]
    ready_delay_ns = [_take_ready_batch(graph, loads, take, b, int(fetch)) for b, take in enumerate(takes)]
    # The first W x prefetch batches were already queued when the profiler window opened.
    _insert_worker_loads(graph, takes, load_ns, ready_delay_ns, [0] * workers, workers * prefetch, workers * prefetch)


def _from_recorded_workers(graph, loads, workers, prefetch, fetch, load, recorded):
    """A trace recorded with k > 0 workers: the load time per batch comes from the main thread's waits."""
    takes = graph.batch_takes()
    if len(takes) <= recorded:
        raise ValueError(f"{len(takes)} batches (steps) in the trace, recorded={recorded}: the load time of a "
                         f"worker shows only across more than {recorded} batches")
    estimate = daydream.estimate_loads(takes, recorded)
    if load != "auto":
        estimate["load_ns"] = [int(load)] * len(takes)
    fetch_ns = estimate["fetch_ns"] if isinstance(fetch, _Fetch) else int(fetch)
    # Another thread idle across a whole wait was waiting for the main thread, not for a fixed time.
    for idle in graph.idle_across(graph.wait_windows(takes, estimate["waited_for"])):
        graph.set_delay(idle["from_task"], idle["to_task"], 0)
        graph.connect(idle["waker"], idle["to_task"], "cross_thread", delay_ns=idle["lag_ns"])
    inline_ns = estimate["load_ns"] if workers == 0 else [0] * len(takes)  # workers=0: as long as a worker took
    ready_delay_ns = [_take_ready_batch(graph, loads, take, b, fetch_ns, inline_ns[b]) for b, take in enumerate(takes)]
    if workers > 0:  # recorded workers start their first batch as the trace shows, new ones with the earliest
        first = daydream.recorded_first_starts(takes, estimate, recorded, fetch_ns)
        begin_ns = [first[w] if w < len(first) else min(first) for w in range(workers)]
        _insert_worker_loads(graph, takes, estimate["load_ns"], ready_delay_ns, begin_ns, workers * prefetch, 0)


def apply(graph, workers: int = 4, prefetch: int = 2, fetch: float = FETCH, load="auto", recorded: int = 0) -> None:
    """Changes `graph` in place; ValueError where the built-in refuses the trace."""
    loads = graph.batch_loads()
    _require_visible_loading(loads, recorded, load)
    if recorded > 0:
        _from_recorded_workers(graph, loads, workers, prefetch, fetch, load, recorded)
    else:
        _from_main_thread_loading(graph, loads, workers, prefetch, fetch, load)
