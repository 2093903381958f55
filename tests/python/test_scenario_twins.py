"""Each Python twin in scenarios/examples/ (written over the public primitives) changes a graph
exactly as its built-in C++ scenario does: the same graph fingerprint and the same simulated
iteration times, to the ns (the twin's graph with the schedule its apply() returns, the built-in's
with its own schedule policy), on the bundled example and on real traces (skipped with a reason
where ../shared is absent)."""

import importlib
import inspect
import sys
from pathlib import Path

import pytest

import daydream

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "scenarios" / "examples"
# A twin is a module of scenarios/examples/ that names the built-in it mirrors (NAME) and has
# apply(graph, **params); the other examples are stand-alone scripts (amp.py: the paper's AMP).
TWINS = sorted(p.stem for p in EXAMPLES.glob("*.py") if "\nNAME = " in p.read_text())
SHARED = REPO.parent / "shared" / "traces"
TRACES = [
    REPO / "tests" / "data" / "example" / "synthetic_training.json.gz",
    SHARED / "linear-2080ti-sgd" / "linear_kineto.json.gz",
    SHARED / "resnet-2080ti-sgd" / "resnet_kineto.json.gz",
    SHARED / "ddp-resnet-v100-rank0" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    SHARED / "ddp-convnet-a100-nccl" / "nccl_data.json.gz",  # NCCL all-reduces of recorded size
    SHARED / "dlrm-v100-8ranks" / "kineto" / "worker0_step_12.1694128201545.pt.trace.json.gz",
    SHARED / "dlrm-v100-8ranks" / "kineto",  # the 8 ranks as one job graph
]
sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(scope="module", params=TRACES, ids=lambda p: p.name if p.is_dir() else p.parent.name)
def graph(request):
    if not request.param.exists():
        pytest.skip(f"trace absent: {request.param}")
    return daydream.load(str(request.param))


def test_every_twin_takes_its_builtins_parameters_with_the_same_defaults():
    assert TWINS, "scenarios/examples/ holds no twin"
    builtins = {s["name"]: {p["name"]: p["default"] for p in s["params"]} for s in daydream.scenarios()}
    for name in TWINS:
        module = importlib.import_module(name)
        params = list(inspect.signature(module.apply).parameters.values())[1:]  # after graph
        assert {p.name: p.default for p in params} == builtins[module.NAME], name


def cases():
    """(twin, spec arguments, apply() keywords): each twin's defaults, then its CASES."""
    for twin in TWINS:
        yield twin, "", {}
        for args, kwargs in getattr(importlib.import_module(twin), "CASES", {}).items():
            yield twin, args, kwargs


@pytest.mark.parametrize(("twin", "args", "kwargs"), list(cases()), ids=lambda v: v if isinstance(v, str) else "")
def test_twin_changes_the_graph_as_the_builtin_does(graph, twin, args, kwargs):
    """apply() may return a schedule (p3's priorities, {task id: priority}); the built-in's own
    policy is the one daydream.predict simulates its changed graph with."""
    module = importlib.import_module(twin)
    python = graph.copy()
    try:
        builtin = daydream.predict(graph, f"{module.NAME}:{args}" if args else module.NAME)
    except daydream.Error:
        with pytest.raises((ValueError, daydream.Error)):
            module.apply(python, **kwargs)
        return
    schedule = module.apply(python, **kwargs)
    assert python.fingerprint() == builtin.graph.fingerprint()
    expected, got = builtin.result, python.simulate(schedule=schedule)
    assert got.total_ns == expected.total_ns
    assert got.iteration_times_ns == expected.iteration_times_ns
