"""Argument checks of the pure-Python API, made before any C++ code runs."""

from __future__ import annotations

from . import _core


def expect_graph(value, caller: str) -> None:
    """TypeError naming `caller` unless `value` is a daydream.Graph (None included)."""
    if not isinstance(value, _core.Graph):
        raise TypeError(f"{caller}: expected a daydream.Graph, got {type(value).__name__}")
