"""daydream.roofline: a trace's kernels on the roofline of its GPU, as pandas DataFrames.

The report is the library's (include/daydream/roofline.hpp, the same as `daydream roofline
--json`; docs/gpu_model.md, "Roofline report"): work per kernel from the shapes the trace records,
each kernel's bound from its arithmetic intensity against the device's ridge point (from its name
where there are no shapes), and time, work, achieved rates and share of peak per kernel class,
operator and layer. This module turns its columns into DataFrames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from . import _core
from ._checks import expect_graph

# The columns of every table; engine and precision: a class's, else those with most of the row's time.
COLUMNS = ("name", "engine", "precision", "time_ms", "kernels", "flops", "bytes", "achieved_tflops", "achieved_gbps", "share_of_peak",
           "bound", "decided_by", "intensity", "ridge", "shaped_time_ms", "shaped_kernels", "expected_ms")


@dataclass
class Roofline:
    """The roofline report of one graph: one DataFrame per table, and the device.

    - classes: one row per kernel class (engine, precision, bound and how it was decided: shapes
      or a name rule);
    - operators: one row per operator (the recorded operator whose work the kernels share, else
      the innermost operator around their launch, else "(no operator)");
    - layers: one row per layer path (empty when no kernel has a layer);
    - expected: expected time at peak (expected_ms = max(FLOPs / peak, bytes / bandwidth)) vs
      measured time (shaped_time_ms) of the kernels with known work, per layer, or per operator
      when no kernel has a layer (summary["expected_by"]).

    Every table has the columns of COLUMNS: time_ms and kernels of all its kernels; flops, bytes,
    the achieved rates, share_of_peak, intensity, ridge and expected_ms over the kernels whose
    work is known (shaped_time_ms, shaped_kernels; NaN when none is). device: name, recorded (the
    trace's name for it), memory_bandwidth_gbps and peaks (engine, precision, tflops, ridge; 0 for
    a unit it lacks). summary: trace, kernels, time_ms, shaped_kernels, shaped_time_ms,
    recorded_operators, malformed_operators (shapes dropped at import), unusable_operators (a rule
    that cannot use their shapes), first_unusable, expected_by.
    """

    classes: "pandas.DataFrame"  # noqa: F821
    operators: "pandas.DataFrame"  # noqa: F821
    layers: "pandas.DataFrame"  # noqa: F821
    expected: "pandas.DataFrame"  # noqa: F821
    device: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def _frame(pandas, columns: dict[str, list], order: tuple[str, ...]) -> "pandas.DataFrame":  # noqa: F821
    frame = pandas.DataFrame({name: columns[name] for name in order}, columns=list(order))
    for name in order:
        if name in ("kernels", "shaped_kernels"):
            frame[name] = frame[name].astype("int64")
        elif name not in ("name", "engine", "precision", "bound", "decided_by"):
            frame[name] = frame[name].astype(float)
    return frame


def roofline(graph: _core.Graph, device: Optional[str] = None, devices: Optional[str] = None) -> Roofline:
    """The roofline report of `graph`'s kernels (docs/gpu_model.md, "Roofline report").

    `device` names a GPU of the catalogue (daydream.gpus()) to use instead of the one the trace
    records (needed when the catalogue does not know it, or the trace names none); `devices` is a
    JSON file of more GPUs. Returns a Roofline of DataFrames (classes, operators, layers,
    expected) with the device's peaks in `.device`.

    Raises daydream.Error for an unknown device, or without one for a trace whose GPU is unknown;
    ImportError without pandas.
    """
    expect_graph(graph, "daydream.roofline")
    try:
        import pandas
    except ImportError as error:
        raise ImportError("daydream.roofline needs pandas, which is not installed: "
                          "python3 -m pip install pandas numpy") from error
    report = _core._roofline(graph, device, devices)
    return Roofline(classes=_frame(pandas, report["classes"], COLUMNS),
                    operators=_frame(pandas, report["operators"], COLUMNS),
                    layers=_frame(pandas, report["layers"], COLUMNS),
                    expected=_frame(pandas, report["expected"], COLUMNS),
                    device=report["device"], summary=report["summary"])
