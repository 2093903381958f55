"""The package itself: exports, stub and marker files, docstrings, the exception class."""

from pathlib import Path

import daydream
from daydream import _core


def test_exports():
    assert set(daydream.__all__) == {
        "EDGE_TYPES", "PHASES", "TASK_KINDS", "UNIT_KINDS", "Error", "Graph", "Result", "Task",
        "TaskSet", "__version__", "load", "Prediction", "scenarios", "describe", "predict",
        "apply_scenario", "sweep", "validate", "write_timeline", "fit_link", "collective_traffic_bytes",
        "estimate_loads", "recorded_first_starts", "RangeTasks", "TraceCollectives", "BackwardPass",
        "TracedPass", "LaunchIndex", "RingCost", "ns_per_byte", "read_parameter_counts", "gpus", "kernel_class",
        "autocast_time_ratio", "autocast_fp32", "roofline", "Roofline", "plot_roofline", "prices", "run_cost", "bottleneck", "Bottleneck",
        "MAX_SPECS"}
    # Written in Python: daydream/_sweep.py, _validate.py, _roofline.py, _bottleneck.py, plot.py
    for name in set(daydream.__all__) - {"sweep", "validate", "roofline", "Roofline", "plot_roofline", "bottleneck",
                                         "Bottleneck"}:
        assert getattr(daydream, name) is getattr(_core, name)
    assert daydream.TASK_KINDS == ("cpu", "runtime", "kernel", "memcpy", "memset", "communication")
    assert daydream.PHASES == ("forward", "backward", "update", "data_loading", "unknown")
    assert daydream.__version__.count(".") == 2


def test_error_class():
    assert issubclass(daydream.Error, RuntimeError)
    assert daydream.Error.__doc__
    assert daydream.Error.__module__ == "daydream"


def test_stub_and_marker_installed_next_to_the_module():
    package = Path(daydream.__file__).parent
    assert (package / "py.typed").exists()
    stub = (package / "_core.pyi").read_text()
    for name in ("class Graph", "class Task", "class TaskSet", "class Result", "class Error", "def load"):
        assert name in stub
    assert Path(_core.__file__).parent == package


def public_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_") and name not in ("__len__", "__iter__", "__contains__", "__eq__", "__hash__",
                                                 "__repr__", "__copy__", "__deepcopy__"):
            continue
        yield name, member


def test_every_def_has_a_docstring():
    assert _core.__doc__ and _core.load.__doc__
    for cls in (daydream.Graph, daydream.Task, daydream.TaskSet, daydream.Result, daydream.RangeTasks):
        assert cls.__doc__, cls
        for name, member in public_members(cls):
            doc = member.__doc__ if not isinstance(member, property) else member.fget.__doc__
            assert doc and doc.strip(), f"{cls.__name__}.{name} has no docstring"


def test_stub_covers_the_api():
    stub = (Path(daydream.__file__).parent / "_core.pyi").read_text()
    for cls in (daydream.Graph, daydream.Task, daydream.TaskSet, daydream.Result, daydream.RangeTasks):
        for name, _ in public_members(cls):
            if not name.startswith("_") or name in ("__len__", "__iter__"):
                assert f"def {name}(" in stub, f"{cls.__name__}.{name} missing from _core.pyi"


def test_signatures_are_readable():
    assert "pred" in daydream.Graph.select.__doc__ and "schedule" in daydream.Graph.simulate.__doc__
    for cls in (daydream.Graph, daydream.Task, daydream.TaskSet, daydream.Result, daydream.RangeTasks):
        for name, member in public_members(cls):
            if not isinstance(member, property):
                assert "handle" not in member.__doc__.splitlines()[0], f"{cls.__name__}.{name}"


def test_stub_is_valid_python():
    import ast

    ast.parse((Path(daydream.__file__).parent / "_core.pyi").read_text())
