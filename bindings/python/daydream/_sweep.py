"""daydream.sweep: many scenarios against one graph, one row each in a pandas DataFrame.

The library's scenarios (specs such as "ddp:machines=2|4,bandwidth=10Gbps", grids expanded) run
in C++ on a pool of threads without the GIL; (name, callable) scenarios then run here, one at a
time, each on its own copy of the graph. The baseline is simulated once per call.

With an executor (concurrent.futures-style: a process pool, Dask's client.get_executor(), ...)
each spec is one submitted task instead: the task carries only the trace files, the layer file,
the graph's fingerprint and the spec, and the worker rebuilds the graph from the files (once per
process), checks the fingerprint and returns the row as plain values. Callables still run here.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import sys
import threading
from typing import Any, Callable, Iterable, NamedTuple, Optional, Union

from . import _core
from ._checks import expect_graph

ProgressCallback = Callable[[int, int], Any]
ScenarioItem = Union[str, "tuple[str, Callable[[_core.Graph], Any]]"]

# The most specs sweep()'s grids may expand to by default (daydream::kDefaultMaxSweepSpecs).
MAX_SPECS = _core.MAX_SPECS
COLUMNS = ("scenario", "baseline_ms", "predicted_ms", "speedup", "dominant", "dominant_share", "error")
# With price=: what each row costs to run (docs/gpu_model.md, "Cost"), after COLUMNS.
COST_COLUMNS = ("gpu", "gpus", "iterations_per_s", "samples_per_s", "usd_per_gpu_hour", "usd_per_1k_iterations",
                "price_source")


class _Row(NamedTuple):
    """One planned row: a library spec or a Python callable."""

    scenario: str
    change: Optional[Callable[[_core.Graph], Any]] = None


def sweep(graph: _core.Graph, scenarios: Iterable[ScenarioItem], *, threads: Optional[int] = None,
          progress: Union[bool, ProgressCallback, None] = False,
          executor: Any = None, price: Optional[str] = None, batch_size: Optional[int] = None,
          device: Optional[str] = None, devices: Optional[str] = None,
          max_specs: int = MAX_SPECS) -> "pandas.DataFrame":  # noqa: F821
    """Predicts every scenario against `graph` and returns one row per scenario, in input order.

    `scenarios` holds specs ("amp", "faster_gpu:factor=2|4": a value may list alternatives with
    '|', expanded first key slowest) and (name, callable) pairs: the callable changes a copy of
    the graph with the primitives (Graph.select, insert, remove) and its return value is ignored.

    Columns: scenario, baseline_ms and predicted_ms (median iteration), speedup, dominant (the
    predicted critical path's main category), dominant_share (its share of the path), error (None,
    or why the scenario could not apply: the other columns are then NaN/None, but baseline_ms), then
    one column per parameter given in the specs, in canonical units with the unit in the name
    (bandwidth_bytes_per_s, bucket_bytes, latency_ns; factor, machines as they are): numbers are
    numeric, NaN (None for texts) where a row does not give the parameter or gives "auto". The same
    columns as `daydream sweep --csv`.

    threads: worker threads for the specs (None: all cores); results do not depend on it.
    progress: True prints "sweep: done/total predictions" to stderr; a callable gets (done, total).
    executor: None (the specs run on this process's threads), or any object whose
    submit(fn, *args) returns a future with result(): concurrent.futures' thread and process
    pools, Dask's client.get_executor(), ... Each spec becomes one task that rebuilds the graph
    from graph.sources (the trace files must be readable there) and the rows are the same as
    without an executor. The graph must be as daydream.load() made it (ValueError otherwise, and
    for a graph not loaded from files, or with threads= also given). Callables are not sent: they
    run here, on copies, while the executor works.
    price: None, or "builtin" (the dated built-in list prices) or a JSON prices file over them:
    adds the columns COST_COLUMNS after `error`, as `daydream sweep --price` prints them (gpu, gpus,
    iterations_per_s, samples_per_s, usd_per_gpu_hour, usd_per_1k_iterations, price_source; None
    or NaN where unknown), and the baseline's as frame.attrs["baseline_cost"] (a dict).
    batch_size: samples per GPU per iteration, for samples_per_s. device: the traced GPU where the
    trace records none or one the catalogue lacks. devices: a devices file (more GPUs).
    max_specs: the most specs the grids may expand to (MAX_SPECS, 100000, as `daydream sweep
    --max-specs`), counted before expanding: a bigger grid raises daydream.Error.
    Bad specs (unknown scenario or parameter, value out of range) and bad prices files raise
    daydream.Error before anything runs.
    """
    expect_graph(graph, "daydream.sweep")
    plan = _plan(scenarios, max_specs)
    report = _progress_reporter(progress, len(plan))
    pricing = _pricing(price, batch_size, device, devices)
    if executor is not None:
        results = _sweep_on_executor(executor, graph, plan, threads, report)
        if not pricing:
            return _frame(plan, results)
        return _with_costs(_frame(plan, results, COLUMNS + COST_COLUMNS), results, pricing,
                           _core._Predictor(graph).baseline)
    predictor = _core._Predictor(graph)
    specs = [row.scenario for row in plan if row.change is None]
    outcomes = iter(predictor.sweep(specs, _thread_count(threads), _relay(report, len(plan))))
    done = len(specs)
    results = []
    for row in plan:
        if row.change is None:
            prediction, error = next(outcomes)
            results.append((_measures(prediction, predictor.baseline_ms), error))
            continue
        results.append(_run_callable(predictor, graph, row))
        done += 1
        if report:
            report(done, len(plan))
    if not pricing:
        return _frame(plan, results)
    return _with_costs(_frame(plan, results, COLUMNS + COST_COLUMNS), results, pricing, predictor.baseline)


class _PriceOptions(NamedTuple):
    """sweep's price=, batch_size=, device= and devices=, checked, with the loaded prices."""

    prices: Any  # _core._Pricing
    batch_size: int
    device: str


def _pricing(price, batch_size, device, devices) -> Optional[_PriceOptions]:
    if price is None:
        if batch_size is not None or device is not None or devices is not None:
            raise ValueError("sweep: batch_size, device and devices go with price= (\"builtin\" or a prices file)")
        return None
    if isinstance(batch_size, bool) or not (batch_size is None or (isinstance(batch_size, int) and batch_size >= 1)):
        raise ValueError(f"sweep: batch_size must be None or an int >= 1, got {batch_size!r}")
    pricing = _PriceOptions(_core._Pricing(str(price), None if devices is None else str(devices)), batch_size or 0,
                            device or "")
    if device:
        pricing.prices.cost(0, "", 0, 1, 0, device)  # an unknown GPU name raises now, listing the known ones
    return pricing


def _with_costs(frame, results: list, pricing: _PriceOptions, baseline: Callable[[], Any]):
    """The frame with COST_COLUMNS after `error` (from each row's measures in `results`), and
    attrs["baseline_cost"] and attrs["batch_size"]."""
    import pandas

    def cost(predicted_ms: float, gpu: str, memory: float, gpus: int) -> dict:
        return pricing.prices.cost(predicted_ms, gpu, memory, gpus, pricing.batch_size, pricing.device)

    costs = [None if math.isnan(m["predicted_ms"]) else cost(m["predicted_ms"], m["gpu"], m["gpu_memory_bytes"], m["gpus"])
             for m, _error in results]
    at = list(frame.columns).index("error") + 1
    for offset, column in enumerate(COST_COLUMNS):
        values = [c[column] if c else None for c in costs]
        if column in ("gpu", "gpus", "price_source"):
            series = pandas.Series(values, dtype=object)
        else:
            series = pandas.Series([math.nan if v is None else v for v in values], dtype=float)
        frame.insert(at + offset, column, series)
    base = baseline()
    frame.attrs["baseline_cost"] = cost(base.baseline_ms, base.gpu, base.gpu_memory_bytes, base.gpus)
    frame.attrs["batch_size"] = pricing.batch_size
    return frame


def _plan(scenarios: Iterable[ScenarioItem], max_specs: int) -> list[_Row]:
    """The rows to run, in order; raises before any work for a malformed item or a bad spec."""
    if isinstance(max_specs, bool) or not isinstance(max_specs, int) or max_specs < 1:
        raise ValueError(f"sweep: max_specs must be an int >= 1, got {max_specs!r}")
    if isinstance(scenarios, str):
        scenarios = [scenarios]
    plan = []
    for item in scenarios:
        if isinstance(item, str):
            plan.extend(_Row(text) for text in _core._expand_grid(item, max_specs - len(plan)))
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and callable(item[1]):
            plan.append(_Row(item[0], item[1]))
        else:
            raise TypeError(f"sweep: a scenario is a spec str or a (name, callable) pair, got {item!r}")
    return plan


def _thread_count(threads: Optional[int]) -> int:
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"sweep: threads must be None or an int >= 1, got {threads!r}")
    return threads


def _progress_reporter(progress, total: int) -> Optional[ProgressCallback]:
    if progress is None or progress is False:
        return None
    if progress is True:
        def show(done: int, _total: int) -> None:
            end = "\n" if done == total else ""
            print(f"\rsweep: {done}/{total} predictions", end=end, file=sys.stderr, flush=True)
        return show
    if callable(progress):
        return progress
    raise TypeError(f"sweep: progress must be a bool or a callable (done, total), got {progress!r}")


def _relay(report: Optional[ProgressCallback], total: int) -> Optional[ProgressCallback]:
    """The C++ sweep counts its own specs; the caller sees the total over every row."""
    if report is None:
        return None
    return lambda done, _specs: report(done, total)


def _run_callable(predictor, graph: _core.Graph, row: _Row):
    """(measures, error) of a (name, callable) row, run on a copy of the graph."""
    changed = graph.copy()
    try:
        row.change(changed)
        return _measures(predictor.evaluate(row.scenario, changed), predictor.baseline_ms), None
    except Exception as error:  # noqa: BLE001 - one failing scenario does not stop the sweep
        if isinstance(error, _core.Error):
            return _measures(None, predictor.baseline_ms), str(error)
        return _measures(None, predictor.baseline_ms), f"{type(error).__name__}: {error}"


# --- executor sweeps ---

class _Origin(NamedTuple):
    """What a worker needs to rebuild the caller's graph, as plain picklable values."""

    sources: tuple
    layers: Optional[str]
    iterations: Optional[str]  # the load(..., iterations=) pattern, or None
    fingerprint: int


def _sweep_on_executor(executor, graph: _core.Graph, plan: list[_Row], threads,
                       report: Optional[ProgressCallback]) -> list:
    """Submits every spec row, runs the callables here meanwhile, then gathers the (measures, error)
    of each row in input order."""
    origin = _origin_for_executor(executor, graph, threads)
    futures = {index: executor.submit(_predict_in_worker, *origin, row.scenario)
               for index, row in enumerate(plan) if row.change is None}
    results: list = [None] * len(plan)
    try:
        done = _run_callables_here(graph, plan, results, report)
        _gather(futures, results, done, len(plan), report)
    except BaseException:
        for future in futures.values():
            cancel = getattr(future, "cancel", None)  # best effort: a cluster stops work nobody will read
            if cancel:
                cancel()
        raise
    return results


def _origin_for_executor(executor, graph: _core.Graph, threads) -> _Origin:
    """Checks, before anything is submitted, that workers can rebuild this very graph."""
    if threads is not None:
        raise ValueError("sweep: give threads= or executor=, not both (the executor decides the parallelism)")
    if not callable(getattr(executor, "submit", None)):
        raise TypeError(f"sweep: executor must have submit(fn, *args) -> future, got {executor!r}")
    if not graph.sources:
        raise ValueError("sweep: executor= needs a graph made by daydream.load(): workers rebuild it from "
                         "its trace files, and this graph has none (pass no executor)")
    fingerprint = graph.fingerprint()
    if fingerprint != graph._loaded_fingerprint:
        raise ValueError(f"sweep: the graph was changed after it was loaded from {_files(graph.sources)}; "
                         "executor sweeps rebuild it from the trace files, so sweep the graph as loaded "
                         "(and give your changes as (name, callable) scenarios), or pass no executor")
    return _Origin(tuple(graph.sources), graph.layer_file, graph.iteration_rule["pattern"], fingerprint)


def _run_callables_here(graph: _core.Graph, plan: list[_Row], results: list,
                        report: Optional[ProgressCallback]) -> int:
    """Fills the callable rows of `results`; returns how many rows are done."""
    indexes = [index for index, row in enumerate(plan) if row.change is not None]
    if not indexes:
        return 0
    predictor = _core._Predictor(graph)
    for done, index in enumerate(indexes, start=1):
        results[index] = _run_callable(predictor, graph, plan[index])
        if report:
            report(done, len(plan))
    return len(indexes)


def _gather(futures: dict, results: list, done: int, total: int, report: Optional[ProgressCallback]) -> None:
    """Waits for the spec rows; progress counts completions (in completion order when the
    futures are concurrent.futures ones, else in input order)."""
    pending = list(futures.values())
    if report and pending and all(isinstance(f, concurrent.futures.Future) for f in pending):
        for future in concurrent.futures.as_completed(pending):
            future.result()  # the first failure raises now, not after every other row
            done += 1
            report(done, total)
        report = None
    for index, future in futures.items():
        row = future.result()
        results[index] = ({column: row[column] for column in _MEASURES}, row["error"])
        if report:
            done += 1
            report(done, total)


def _files(sources) -> str:
    return ", ".join(sources)


# The worker side: module-level, so that process and cluster executors can pickle a reference.

_LOAD_LOCK = threading.Lock()  # a thread pool's workers share one load per graph


def _predict_in_worker(sources: tuple, layers: Optional[str], iterations: Optional[str], fingerprint: int,
                       spec: str) -> dict:
    """One spec against the graph rebuilt from `sources`: the row's measures and error, as plain
    values. Raises daydream.Error when the rebuilt graph is not the caller's."""
    predictor = _predictor_for(sources, layers, iterations, fingerprint)
    [(prediction, error)] = predictor.sweep([spec], 1, None)  # one thread: the executor spreads the rows
    row = _measures(prediction, predictor.baseline_ms)
    row["error"] = error
    return row


def _predictor_for(sources: tuple, layers: Optional[str], iterations: Optional[str], fingerprint: int):
    with _LOAD_LOCK:
        loaded_fingerprint, predictor = _load_for_worker(sources, layers, iterations)
        if loaded_fingerprint != fingerprint:  # the files may have been rewritten since they were cached
            _load_for_worker.cache_clear()
            loaded_fingerprint, predictor = _load_for_worker(sources, layers, iterations)
    if loaded_fingerprint != fingerprint:
        raise _core.Error(
            f"sweep: the graph rebuilt from {_files(sources)} on this worker (fingerprint {loaded_fingerprint:#018x}) "
            f"is not the caller's ({fingerprint:#018x}): the graph was changed after it was loaded, or the files "
            "(or the daydream version) differ here. Executor sweeps rebuild the graph from the trace files, so "
            "sweep a graph loaded from files, or pass no executor")
    return predictor


@functools.lru_cache(maxsize=4)
def _load_for_worker(sources: tuple, layers: Optional[str], iterations: Optional[str]):
    """(fingerprint, predictor) of the graph in these files; the baseline is simulated once per process."""
    from . import load  # the package's load, which knows every form of `sources`

    graph = load(sources[0] if len(sources) == 1 else list(sources), layers, iterations)
    return graph.fingerprint(), _core._Predictor(graph)


def _frame(plan: list[_Row], results: list, reserved: tuple = COLUMNS):
    """The DataFrame of the rows; results holds (measures, error) per row (see _measures). Then
    the parameters the specs give, as `daydream sweep --csv` prints them: one column per parameter
    and canonical unit (`bandwidth_bytes_per_s`, `latency_ns`, `bucket_bytes`, `factor`), numbers
    as numbers, NaN/None where a row does not give it; a name like a `reserved` column gets a
    param_ prefix."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError("daydream.sweep needs pandas, which is not installed: "
                          "python3 -m pip install pandas numpy") from error

    specs = [row.scenario for row in plan if row.change is None]
    params, cells = _core._parameter_table(specs, list(reserved))
    cells = iter(cells)
    records = []
    for row, (measures, error) in zip(plan, results):
        record = dict(measures)
        record["scenario"], record["error"] = row.scenario, error
        given = next(cells) if row.change is None else [None] * len(params)
        record.update(zip(params, given))
        records.append(record)
    frame = pandas.DataFrame(records, columns=[*COLUMNS, *params])
    for column in ("dominant", "error"):  # None where missing, whatever pandas infers
        frame[column] = pandas.Series([r[column] for r in records], dtype=object)
    for column in params:  # integers Int64 and numbers float64 (<NA>/NaN where missing), texts object (None)
        values = [r[column] for r in records]
        frame[column] = pandas.Series(values, dtype=_parameter_dtype(values))
    return frame


def _parameter_dtype(values: list):
    """Int64 for integers (pandas' nullable integers), float64 for numbers, object for texts."""
    given = [v for v in values if v is not None]
    if given and all(isinstance(v, int) for v in given):
        return "Int64"
    if given and all(isinstance(v, (int, float)) for v in given):
        return "float64"
    return object


# The columns, then what the row's cost needs (price=): the GPU as the changed graph records it and the job's GPUs.
_MEASURES = ("baseline_ms", "predicted_ms", "speedup", "dominant", "dominant_share", "gpu", "gpu_memory_bytes", "gpus")


def _measures(prediction, baseline_ms: float) -> dict:
    """The row's columns _MEASURES, as plain floats and str (picklable: workers return them)."""
    if prediction is None:
        nan = math.nan
        return {"baseline_ms": baseline_ms, "predicted_ms": nan, "speedup": nan, "dominant": None,
                "dominant_share": nan, "gpu": "", "gpu_memory_bytes": 0.0, "gpus": 1}
    path = prediction.critical_path
    dominant = path["dominant"]
    share = path["by_category_ms"][dominant] / path["length_ms"] if path["length_ms"] > 0 else math.nan
    return {"baseline_ms": prediction.baseline_ms, "predicted_ms": prediction.predicted_ms,
            "speedup": prediction.speedup, "dominant": dominant, "dominant_share": share,
            "gpu": prediction.gpu, "gpu_memory_bytes": prediction.gpu_memory_bytes, "gpus": prediction.gpus}
