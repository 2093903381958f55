"""daydream.bottleneck: "what is my bottleneck?" on the unmodified run, as pandas DataFrames.

The report is the library's (include/daydream/bottleneck.hpp, the same as `daydream bottleneck
--json`, with every row instead of the first 10): the baseline's critical path inside the
iterations by category (predict's categories), by layer, by innermost operator and by kernel, and
each GPU stream's idle time split by what it waited for (cpu, data, sync, other_stream,
communication, latency), as Holistic Trace Analysis's idle-time breakdown.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _core
from ._checks import expect_graph

IDLE_CAUSES = ("cpu", "data", "sync", "other_stream", "communication", "latency")


@dataclass
class Bottleneck:
    """The bottleneck report of one graph.

    - categories: category, ms, share (of the critical path inside the iterations);
    - layers: layer, ms, share ("(no layer)" for tasks without one);
    - operators, kernels: name, ms, share, tasks: critical-path time by innermost operator and
      by GPU task name, longest first;
    - streams: unit, main (the busiest stream of its GPU, which the summary speaks of),
      window_ms, busy_ms, idle_ms and one `<cause>_ms` column per IDLE_CAUSES, for every GPU
      stream with work inside the iterations;
    - summary: the one line `daydream bottleneck` and `replay` end with; dominant: the critical
      path's main category; iteration_ms: the median iteration (predict's baseline), iterations:
      how many, window_ms: (start, end) of the iterations in the simulated run.
    """

    categories: "pandas.DataFrame"  # noqa: F821
    layers: "pandas.DataFrame"  # noqa: F821
    operators: "pandas.DataFrame"  # noqa: F821
    kernels: "pandas.DataFrame"  # noqa: F821
    streams: "pandas.DataFrame"  # noqa: F821
    summary: str
    dominant: str
    iteration_ms: float
    iterations: int
    window_ms: tuple

    def __repr__(self) -> str:
        return f"<daydream.Bottleneck: {self.summary}>"


def _with_share(pandas, columns: dict, length_ms: float) -> "pandas.DataFrame":  # noqa: F821
    frame = pandas.DataFrame(columns)
    frame["share"] = frame["ms"] / length_ms if length_ms > 0 else 0.0
    return frame


def bottleneck(graph: _core.Graph) -> Bottleneck:
    """What limits `graph`'s unmodified run (docs/python.md, "bottleneck"): a Bottleneck of
    DataFrames. The graph is not changed. ImportError without pandas."""
    expect_graph(graph, "daydream.bottleneck")
    try:
        import pandas
    except ImportError as error:
        raise ImportError("daydream.bottleneck needs pandas, which is not installed: "
                          "python3 -m pip install pandas numpy") from error
    report = _core._bottleneck(graph)
    path = report["critical_path"]
    length = path["length_ms"]
    streams = pandas.DataFrame(report["streams"], columns=["unit", "main", "window_ms", "busy_ms", "idle_ms",
                                                           *(f"{cause}_ms" for cause in IDLE_CAUSES)])
    return Bottleneck(categories=_with_share(pandas, path["categories"], length),
                      layers=_with_share(pandas, path["layers"], length),
                      operators=_with_share(pandas, report["operators"], length),
                      kernels=_with_share(pandas, report["kernels"], length),
                      streams=streams, summary=report["summary"], dominant=path["dominant"],
                      iteration_ms=report["iteration_ms"], iterations=report["iterations"],
                      window_ms=tuple(report["window_ms"]))
