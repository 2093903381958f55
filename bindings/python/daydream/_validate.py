"""daydream.validate: a prediction checked against a measured run, as a pandas DataFrame.

The comparison is the library's (include/daydream/validate.hpp, the same as `daydream validate
--json`); this module loads paths and turns its JSON into one row per iteration, with the summary
in DataFrame.attrs.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional, Union

from . import _core

GraphOrPath = Union[_core.Graph, str, "os.PathLike[str]"]

COLUMNS = ("name", "predicted_ms", "measured_ms", "error", "baseline_ms", "before_measured_ms", "compared")


def _graph(run: GraphOrPath, *, layers: Optional[Union[str, "os.PathLike[str]"]],
           iterations: Optional[str]) -> _core.Graph:
    if isinstance(run, _core.Graph):
        return run
    if not isinstance(run, (str, os.PathLike)):
        raise TypeError(f"daydream.validate: expected a Graph or a path, got {type(run).__name__}")
    return _core.load(run, layers=layers, iterations=iterations)


def validate(before: GraphOrPath, after: GraphOrPath, scenario: str, *, iterations: Optional[str] = None,
             layers: Optional[Union[str, "os.PathLike[str]"]] = None) -> "pandas.DataFrame":  # noqa: F821
    """Predicts `scenario` from `before` and compares it with the iterations `after` measured.

    `before` and `after` are trace paths (any format daydream.load reads) or loaded Graphs.
    `iterations` (a regular expression naming the iteration ranges) and `layers` (a JSON layer
    file, applied to `before` only) are used when loading paths; a Graph keeps what it was loaded
    with.

    Returns one row per iteration position both runs have (paired by position): name,
    predicted_ms, measured_ms, error ((predicted - measured) / measured), baseline_ms (`before`
    replayed unchanged), before_measured_ms, compared (False: left out of the statistics, e.g. the
    last iteration when the others are measured start to start). `frame.attrs` holds the summary,
    the dict of `daydream validate --json` without "iterations": before, after, scenario,
    iteration_rule, compared (a count), predicted / measured / baseline / before_measured
    {median_ms, mean_ms}, error {median, mean}, replay_error {median, mean}, speedup {median, mean},
    notes, scenario_notes.

    Raises daydream.Error (naming the file) for an unreadable trace, a run without iterations or
    nothing to compare, and for a bad spec; ImportError without pandas.
    """
    try:
        import pandas
    except ImportError as error:
        raise ImportError("daydream.validate needs pandas, which is not installed: "
                          "python3 -m pip install pandas numpy") from error
    before_graph = _graph(before, layers=layers, iterations=iterations)
    after_graph = _graph(after, layers=None, iterations=iterations)
    summary: dict[str, Any] = json.loads(_core._validate(before_graph, after_graph, scenario))
    rows = summary.pop("iterations")
    frame = pandas.DataFrame([[row[c] for c in COLUMNS] for row in rows], columns=list(COLUMNS))
    for column in ("predicted_ms", "measured_ms", "error", "baseline_ms", "before_measured_ms"):
        frame[column] = frame[column].astype(float)  # None (no prediction) becomes NaN
    frame["compared"] = frame["compared"].astype(bool)
    frame.attrs.update(summary)
    return frame
