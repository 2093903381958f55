"""daydream.sweep: many scenarios against one graph, one row each in a pandas DataFrame.

The library's scenarios (specs such as "ddp:machines=2|4,bandwidth=10Gbps", grids expanded) run
in C++ on a pool of threads without the GIL; (name, callable) scenarios then run here, one at a
time, each on its own copy of the graph. The baseline is simulated once per call.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable, Iterable, NamedTuple, Optional, Union

from . import _core

ProgressCallback = Callable[[int, int], Any]
ScenarioItem = Union[str, "tuple[str, Callable[[_core.Graph], Any]]"]

COLUMNS = ("scenario", "baseline_ms", "predicted_ms", "speedup", "dominant", "dominant_share", "error")


class _Row(NamedTuple):
    """One planned row: a library spec (with its arguments as written) or a Python callable."""

    scenario: str
    args: tuple = ()
    change: Optional[Callable[[_core.Graph], Any]] = None


def sweep(graph: _core.Graph, scenarios: Iterable[ScenarioItem], *, threads: Optional[int] = None,
          progress: Union[bool, ProgressCallback, None] = False) -> "pandas.DataFrame":  # noqa: F821
    """Predicts every scenario against `graph` and returns one row per scenario, in input order.

    `scenarios` holds specs ("amp", "faster_gpu:factor=2|4": a value may list alternatives with
    '|', expanded first key slowest) and (name, callable) pairs: the callable changes a copy of
    the graph with the primitives (Graph.select, insert, remove) and its return value is ignored.

    Columns: scenario, baseline_ms and predicted_ms (median iteration), speedup, dominant (the
    predicted critical path's main category), dominant_share (its share of the path), error (None,
    or why the scenario could not apply: the other columns are then NaN/None, but baseline_ms), then
    one column per parameter given in the specs, values as written (None where not given).

    threads: worker threads for the specs (None: all cores); results do not depend on it.
    progress: True prints "sweep: done/total" to stderr; a callable gets (done, total).
    Bad specs (unknown scenario or parameter, value out of range) raise daydream.Error before
    anything runs.
    """
    plan = _plan(scenarios)
    report = _progress_reporter(progress, len(plan))
    predictor = _core._Predictor(graph)
    specs = [row.scenario for row in plan if row.change is None]
    outcomes = iter(predictor.sweep(specs, _thread_count(threads), _relay(report, len(plan))))
    done = len(specs)
    results = []
    for row in plan:
        if row.change is None:
            results.append(next(outcomes))
            continue
        results.append(_run_callable(predictor, graph, row))
        done += 1
        if report:
            report(done, len(plan))
    return _frame(plan, results, predictor.baseline_ms)


def _plan(scenarios: Iterable[ScenarioItem]) -> list[_Row]:
    """The rows to run, in order; raises before any work for a malformed item or a bad spec."""
    if isinstance(scenarios, str):
        scenarios = [scenarios]
    plan = []
    for item in scenarios:
        if isinstance(item, str):
            plan.extend(_Row(text, tuple(args)) for text, args in _core._expand_grid(item))
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and callable(item[1]):
            plan.append(_Row(item[0], (), item[1]))
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
            print(f"\rsweep: {done}/{total} scenarios", end=end, file=sys.stderr, flush=True)
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
    changed = graph.copy()
    try:
        row.change(changed)
        return predictor.evaluate(row.scenario, changed), None
    except Exception as error:  # noqa: BLE001 - one failing scenario does not stop the sweep
        if isinstance(error, _core.Error):
            return None, str(error)
        return None, f"{type(error).__name__}: {error}"


def _frame(plan: list[_Row], results: list, baseline_ms: float):
    try:
        import pandas
    except ImportError as error:
        raise ImportError("daydream.sweep needs pandas, which is not installed: "
                          "python3 -m pip install pandas numpy") from error

    params = _parameter_columns(plan)
    records = []
    for row, (prediction, error) in zip(plan, results):
        record = _measures(prediction, baseline_ms)
        record["scenario"], record["error"] = row.scenario, error
        given = dict(row.args)
        record.update({column: given.get(name) for name, column in params.items()})
        records.append(record)
    frame = pandas.DataFrame(records, columns=[*COLUMNS, *params.values()])
    for column in ("dominant", "error", *params.values()):  # None where missing, whatever pandas infers
        frame[column] = pandas.Series([r[column] for r in records], dtype=object)
    return frame


def _parameter_columns(plan: list[_Row]) -> dict[str, str]:
    """{parameter: column} in order of first appearance; a name that clashes gets a param_ prefix."""
    columns: dict[str, str] = {}
    for row in plan:
        for name, _ in row.args:
            columns.setdefault(name, f"param_{name}" if name in COLUMNS else name)
    return columns


def _measures(prediction, baseline_ms: float) -> dict:
    if prediction is None:
        nan = math.nan
        return {"baseline_ms": baseline_ms, "predicted_ms": nan, "speedup": nan, "dominant": None,
                "dominant_share": nan}
    path = prediction.critical_path
    dominant = path["dominant"]
    share = path["by_category_ms"][dominant] / path["length_ms"] if path["length_ms"] > 0 else math.nan
    return {"baseline_ms": prediction.baseline_ms, "predicted_ms": prediction.predicted_ms,
            "speedup": prediction.speedup, "dominant": dominant, "dominant_share": share}
