"""daydream.torch, the PyTorch helper: module marks in profiler traces and the profiling wrapper.

The first tests need no torch: importing daydream (and daydream.torch) must not import torch, a
call that needs torch must say how to install it, and the mark names must round-trip. The others
train a small model on the CPU for a few steps under `daydream.torch.profile` and check the
Kineto trace it writes and what daydream makes of it; they skip when torch is not installed.
"""

import gzip
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import daydream
import daydream.torch as dt

PACKAGE_ROOT = str(Path(daydream.__file__).resolve().parents[1])

# A hook that fails only warns (training goes on); here it fails the test.
pytestmark = pytest.mark.filterwarnings("error:daydream.torch")


def run_python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------------------------------------------
# without torch


def test_importing_daydream_does_not_import_torch():
    result = run_python(
        "import sys, daydream, daydream.torch\n"
        "assert 'torch' not in sys.modules, 'daydream imported torch'\n"
        "print(daydream.torch.mark_name('block.fc1', 'forward'))\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "daydream.layer:block.fc1:forward"


def test_without_torch_calls_raise_a_clear_import_error():
    # `import torch` fails in the child as it does where torch is not installed.
    result = run_python(
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "import daydream.torch as dt\n"
        "assert dt.parse_mark('daydream.layer:a:backward') == ('a', 'backward')\n"
        "for call in (lambda: dt.annotate(object()), lambda: dt.profile(lambda: None),\n"
        "             lambda: dt.annotate_optimizer(object()), lambda: dt.Profiler().__enter__()):\n"
        "    try:\n"
        "        call()\n"
        "    except ImportError as error:\n"
        "        print(error)\n"
        "    else:\n"
        "        raise SystemExit('no ImportError')\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 4
    for line in lines:
        assert "daydream.torch needs PyTorch" in line and "pip install torch" in line


def test_mark_names_round_trip():
    assert dt.MARK_PREFIX == "daydream.layer:"
    assert dt.MARK_PHASES == ("forward", "backward", "update")
    for layer in ("Net", "layer1.0.conv1", "0", "encoder:block.2"):
        for phase in dt.MARK_PHASES:
            name = dt.mark_name(layer, phase)
            assert name == f"daydream.layer:{layer}:{phase}"
            assert dt.parse_mark(name) == dt.Mark(layer, phase)
            assert dt.parse_mark(name).layer == layer


def test_parse_mark_ignores_other_ranges():
    for name in ("ProfilerStep#3", "aten::mm", "daydream.layer:", "daydream.layer:x", "daydream.layer::forward",
                 "daydream.layer:x:sideways", "nn.Module: Linear_0", "", None, 3):
        assert dt.parse_mark(name) is None, name


def test_mark_name_rejects_bad_input():
    with pytest.raises(ValueError, match="phase"):
        dt.mark_name("x", "unknown")
    for layer in ("", "a/b", "a\nb", None):
        with pytest.raises(ValueError):
            dt.mark_name(layer, "forward")


def test_profiler_arguments_are_checked_before_torch_is_needed():
    for kwargs in ({"steps": 0}, {"warmup": -1}, {"wait": -1}, {"steps": 1.5}, {"steps": True}):
        with pytest.raises(ValueError):
            dt.Profiler(**kwargs)


# ------------------------------------------------------------------------------------------------
# with torch

@pytest.fixture(scope="module")
def torch():
    module = pytest.importorskip(
        "torch", reason="PyTorch is not installed (python3 -m pip install torch): daydream.torch's trace tests skipped")
    threads = module.get_num_threads()
    module.set_num_threads(1)  # steadier CPU timings on a small, busy machine
    yield module
    module.set_num_threads(threads)


def make_model(torch):
    """Net > stem (Linear, ReLU), block (fc1, in-place ReLU used twice, fc2, a residual add), head."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(128, 128)
            self.act = nn.ReLU(inplace=True)
            self.fc2 = nn.Linear(128, 128)

        def forward(self, x):
            h = self.act(self.fc1(x))
            return self.act(self.fc2(h) + x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Linear(32, 128), nn.ReLU())
            self.block = Block()
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            return self.head(self.block(self.stem(x)))

    torch.manual_seed(0)
    return Net()


# Layer path of each module of make_model, and its forward calls per step.
MODEL_LAYERS = {
    "Net": ("Net", 1), "stem": ("Net/stem", 1), "stem.0": ("Net/stem/stem.0", 1), "stem.1": ("Net/stem/stem.1", 1),
    "block": ("Net/block", 1), "block.fc1": ("Net/block/block.fc1", 1), "block.act": ("Net/block/block.act", 2),
    "block.fc2": ("Net/block/block.fc2", 1), "head": ("Net/head", 1),
}
LINEARS = ("stem.0", "block.fc1", "block.fc2", "head")
STEPS = 3


class Trace:
    def __init__(self, path):
        self.path = path
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt") as f:
            self.events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
        self.steps = sorted((e for e in self.events if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
        self.marks = [e for e in self.events if dt.parse_mark(e["name"])]

    def in_step(self, event, step) -> bool:
        return step["ts"] <= event["ts"] < step["ts"] + step["dur"]

    def marks_of(self, phase, step=None):
        return [e for e in self.marks if dt.parse_mark(e["name"]).phase == phase
                and (step is None or self.in_step(e, step))]


def train_step_fn(torch, model, loss_fn, optimizer):
    x = torch.randn(64, 32)
    y = torch.randint(0, 10, (64,))

    def step():
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


@pytest.fixture(scope="module")
def trained(torch, tmp_path_factory):
    """A few CPU training steps of make_model under daydream.torch.profile."""
    model = make_model(torch)
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    path = tmp_path_factory.mktemp("torch") / "train.pt.trace.json.gz"
    returned = dt.profile(train_step_fn(torch, model, loss_fn, optimizer), steps=STEPS, warmup=1,
                          path=path, model=[model, loss_fn], optimizer=optimizer)
    assert returned == str(path)
    # profile() took its hooks off again.
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert "step" not in vars(optimizer) and "zero_grad" not in vars(optimizer)
    return Trace(path)


@pytest.fixture(scope="module")
def frame(trained):
    frame = daydream.load(trained.path).tasks_frame()
    return frame[frame.iteration >= 0]


def test_trace_has_the_recorded_profiler_steps(trained):
    assert [e["name"] for e in trained.steps] == [f"ProfilerStep#{n}" for n in range(1, STEPS + 1)]
    graph = daydream.load(trained.path)
    assert graph.iterations == [f"ProfilerStep#{n}" for n in range(1, STEPS + 1)]


def test_every_module_is_marked_in_both_phases_in_every_step(trained):
    expected = {name: calls for name, (_, calls) in MODEL_LAYERS.items()}
    expected["CrossEntropyLoss"] = 1
    for step in trained.steps:
        for phase in ("forward", "backward"):
            seen = Counter(dt.parse_mark(e["name"]).layer for e in trained.marks_of(phase, step))
            assert seen == expected, (step["name"], phase)
        assert [dt.parse_mark(e["name"]).layer for e in trained.marks_of("update", step)] == ["optimizer"] * 2


def nested_or_disjoint(events):
    """Whether the ranges nest (each is inside the last open one or after it), as a stack."""
    stack = []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
            stack.pop()
        if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]:
            return False, (stack[-1]["name"], e["name"])
        stack.append(e)
    return True, None


def test_marks_nest_on_every_thread(trained):
    by_thread = defaultdict(list)
    for e in trained.marks:
        by_thread[e["tid"]].append(e)
    for tid, events in by_thread.items():
        ok, pair = nested_or_disjoint(events)
        assert ok, f"thread {tid}: {pair[1]} overlaps the end of {pair[0]}"


@pytest.mark.parametrize("phase", ["forward", "backward"])
def test_marks_nest_as_modules_do(trained, phase):
    """model > block > layer: each module's range lies inside its parent's, in both phases."""
    parent = {name: path.rsplit("/", 2)[-2] if path.count("/") else None for name, (path, _) in MODEL_LAYERS.items()}
    for step in trained.steps:
        marks = trained.marks_of(phase, step)
        by_layer = defaultdict(list)
        for e in marks:
            by_layer[dt.parse_mark(e["name"]).layer].append(e)
        for e in marks:
            layer = dt.parse_mark(e["name"]).layer
            if parent.get(layer) is None:
                continue
            assert any(p["tid"] == e["tid"] and p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"]
                       for p in by_layer[parent[layer]]), (step["name"], e["name"])


def test_backward_marks_are_on_the_autograd_thread(trained):
    """Backward hooks run where the autograd engine runs the backward pass (the calling thread
    on the CPU, a device thread for CUDA tensors): the marks are on that thread, around its
    work."""
    engine = [e for e in trained.events if e["name"].startswith("autograd::engine::evaluate_function")]
    assert engine
    engine_threads = {e["tid"] for e in engine}
    forward_threads = {e["tid"] for e in trained.marks_of("forward")}
    for e in trained.marks_of("backward"):
        assert e["tid"] in engine_threads
        end = e["ts"] + e["dur"]
        assert any(w["tid"] == e["tid"] and e["ts"] <= w["ts"] + w["dur"] and w["ts"] <= end for w in engine), e
    for step in trained.steps:
        assert {e["tid"] for e in trained.marks_of("forward", step)} == {step["tid"]}
    assert forward_threads == {s["tid"] for s in trained.steps}


def test_optimizer_mark_encloses_the_optimizer_ranges(trained):
    update = trained.marks_of("update")
    for e in trained.events:
        if e["name"].startswith(("Optimizer.step#", "Optimizer.zero_grad#")):
            assert any(u["tid"] == e["tid"] and u["ts"] <= e["ts"] and e["ts"] + e["dur"] <= u["ts"] + u["dur"]
                       for u in update), e["name"]


def test_forward_operators_get_their_module_path_and_phase(frame):
    addmm = frame[(frame.name == "aten::addmm")]
    assert len(addmm) >= len(LINEARS) * STEPS
    assert set(addmm.layer) == {MODEL_LAYERS[name][0] for name in LINEARS}
    assert set(addmm.phase) == {"forward"}
    loss = frame[frame.name.str.startswith("aten::log_softmax") | (frame.name == "aten::_log_softmax")]
    assert len(loss) and set(loss.layer) == {"CrossEntropyLoss"} and set(loss.phase) == {"forward"}


def test_optimizer_work_is_in_the_update_phase(frame):
    update = frame[frame.layer == "optimizer"]
    assert len(update) and set(update.phase) == {"update"}
    assert (update.name.str.startswith("aten::add_")).any()


def test_backward_operators_get_the_path_of_their_forward_module(frame):
    """Intended behaviour: a backward operator is attributed to the same layer path as the
    forward operator it differentiates, through the backward marks (which daydream applies by
    interval on the autograd thread) or the autograd sequence number."""
    backward = frame[frame.phase == "backward"]
    mm = backward[backward.name.isin(["aten::mm", "aten::sum", "AddmmBackward0"])]
    assert len(mm)
    paths = {path for path, _ in MODEL_LAYERS.values()}
    assert set(mm.layer.dropna()) <= paths, sorted(set(mm.layer.dropna()) - paths)
    assert set(mm.layer.dropna()) == {MODEL_LAYERS[name][0] for name in LINEARS}
    relu = backward[backward.name.isin(["aten::threshold_backward", "ReluBackward0"])]
    assert set(relu.layer) <= {"Net/stem/stem.1", "Net/block/block.act"}


def test_gradient_accumulation_is_attributed_to_the_module_that_owns_the_parameter(frame):
    """Intended behaviour: AccumulateGrad runs right after the node that computed the gradient,
    inside the module's backward mark, so it takes that module's layer (it has no forward
    operator to follow by sequence number)."""
    accumulate = frame[(frame.phase == "backward") & frame.name.str.contains("AccumulateGrad")]
    assert len(accumulate)
    assert accumulate.layer.notna().all(), f"{accumulate.layer.isna().sum()} AccumulateGrad tasks without a layer"
    assert set(accumulate.layer) <= {MODEL_LAYERS[name][0] for name in LINEARS}


def test_almost_all_operator_time_is_attributed_to_a_layer(frame):
    aten = frame[(frame.kind == "cpu") & frame.name.str.startswith("aten::")]
    coverage = aten[aten.layer.notna()].duration_ns.sum() / aten.duration_ns.sum()
    unattributed = aten[aten.layer.isna()].groupby("name").duration_ns.sum().sort_values(ascending=False)
    print(f"\naten operator CPU time attributed to a layer: {coverage:.2%}; unattributed: {dict(unattributed.head(5))}")
    assert coverage >= 0.95, f"{coverage:.2%} of aten CPU time has a layer; unattributed: {dict(unattributed.head(5))}"


# ------------------------------------------------------------------------------------------------
# annotate and Profiler, case by case

def record(torch, fn, path, **kwargs) -> Trace:
    """Runs fn once (after one warm-up call) under the profiler; no model given to profile()."""
    return Trace(dt.profile(fn, steps=1, warmup=1, path=path, **kwargs))


def test_annotate_returns_a_handle_whose_remove_takes_the_hooks_off(torch, tmp_path):
    model = make_model(torch)
    handle = dt.annotate(model, name="Model")
    assert handle.layers[0] == "Model" and "block.fc1" in handle.layers and len(handle.layers) == len(MODEL_LAYERS)
    assert all(m._forward_pre_hooks and m._forward_hooks for m in model.modules())
    with pytest.raises(ValueError, match="already annotated"):
        dt.annotate(model)
    x = torch.randn(4, 32)
    marked = record(torch, lambda: model(x).sum().backward(), tmp_path / "a.json")
    assert {dt.parse_mark(e["name"]).layer for e in marked.marks} >= {"Model", "block.fc1"}
    handle.remove()
    handle.remove()  # a second call does nothing
    assert handle.removed
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in model.modules())
    assert not record(torch, lambda: model(x).sum().backward(), tmp_path / "b.json").marks
    with dt.annotate(model):  # annotating again after remove() works, also as a context manager
        assert record(torch, lambda: model(x).sum().backward(), tmp_path / "c.json").marks
    assert all(not m._forward_hooks for m in model.modules())


def test_annotate_checks_its_arguments(torch):
    with pytest.raises(TypeError, match="nn.Module"):
        dt.annotate(object())
    with pytest.raises(ValueError):
        dt.annotate(torch.nn.Linear(2, 2), name="a/b")
    with pytest.raises(TypeError, match="Optimizer"):
        dt.annotate_optimizer(torch.nn.Linear(2, 2))


def test_no_grad_forward_has_forward_marks_only(torch, tmp_path):
    model = make_model(torch)
    x = torch.randn(4, 32)

    def infer():
        with torch.no_grad():
            model(x)

    with dt.annotate(model):
        trace = record(torch, infer, tmp_path / "t.json")
    assert {dt.parse_mark(e["name"]).phase for e in trace.marks} == {"forward"}


def test_second_backward_through_a_retained_graph_is_marked_again(torch, tmp_path):
    model = make_model(torch)
    x = torch.randn(4, 32)

    def twice():
        out = model(x).sum()
        out.backward(retain_graph=True)
        out.backward()

    with dt.annotate(model):
        trace = record(torch, twice, tmp_path / "t.json")
    layers = Counter(dt.parse_mark(e["name"]).layer for e in trace.marks_of("backward"))
    assert layers["Net"] == 2 and layers["block.fc1"] == 2 and layers["block.act"] == 4
    assert nested_or_disjoint(trace.marks_of("backward"))[0]


def test_an_exception_in_forward_leaves_later_marks_well_formed(torch, tmp_path):
    nn = torch.nn

    class Fails(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    model = nn.Sequential(nn.Linear(8, 8), nn.Sequential(nn.Linear(8, 8)))
    x = torch.randn(2, 8)

    def step():
        model[1].append(Fails())
        with pytest.raises(RuntimeError, match="boom"):
            model(x)
        del model[1][1]
        model(x).sum().backward()

    with dt.annotate(model, name="m"):
        trace = record(torch, step, tmp_path / "t.json")
    assert nested_or_disjoint(trace.marks)[0]
    assert Counter(dt.parse_mark(e["name"]).layer for e in trace.marks_of("backward")) == {"m": 1, "0": 1, "1": 1, "1.0": 1}


def test_a_backward_pass_that_raises_leaves_later_marks_well_formed(torch, tmp_path):
    nn = torch.nn
    fail = {"now": False}

    class Check(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            if fail["now"]:
                raise RuntimeError("backward failed")
            return grad

    class Checked(nn.Module):
        def forward(self, x):
            return Check.apply(x)

    model = nn.Sequential(nn.Linear(8, 8), Checked(), nn.Linear(8, 8))
    x = torch.randn(2, 8)

    def step():
        fail["now"] = True
        with pytest.raises(RuntimeError, match="backward failed"):
            model(x).sum().backward()
        fail["now"] = False
        model(x).sum().backward()

    with dt.annotate(model, name="m"):
        trace = record(torch, step, tmp_path / "t.json")
    assert nested_or_disjoint(trace.marks)[0]
    for b in trace.marks_of("backward"):  # the failed pass's ranges end before the next forward
        assert not any(b["ts"] <= f["ts"] < b["ts"] + b["dur"] for f in trace.marks_of("forward")), b["name"]
    ok = [e for e in trace.marks_of("backward") if e["ts"] >= max(f["ts"] for f in trace.marks_of("forward"))]
    assert Counter(dt.parse_mark(e["name"]).layer for e in ok) == {"m": 1, "0": 1, "1": 1, "2": 1}


def test_module_outputs_in_dicts_and_keyword_inputs_are_followed(torch, tmp_path):
    nn = torch.nn

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x, *, scale):
            return {"out": self.fc(x) * scale}

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = nn.Linear(8, 8)
            self.inner = Inner()

        def forward(self, x):
            return self.inner(self.pre(x), scale=2.0)["out"]

    model = Outer()
    x = torch.randn(2, 8)
    with dt.annotate(model):
        trace = record(torch, lambda: model(x).sum().backward(), tmp_path / "t.json")
    backward = {dt.parse_mark(e["name"]).layer: e for e in trace.marks_of("backward")}
    assert set(backward) == {"Outer", "pre", "inner", "inner.fc"}
    inner, pre = backward["inner"], backward["pre"]
    assert inner["ts"] + inner["dur"] <= pre["ts"]  # inner's backward ends when its input's gradient is ready


def test_profiler_context_manager(torch, tmp_path):
    model = make_model(torch)
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    step = train_step_fn(torch, model, loss_fn, optimizer)
    with dt.Profiler(steps=2, warmup=1, wait=1, model=model, optimizer=optimizer) as prof:
        assert prof.total_steps == 4
        done = []
        for _ in range(10):
            step()
            done.append(prof.step())
            if done[-1]:
                break
    assert done == [False, False, False, True]
    assert prof.path and prof.path.endswith(".pt.trace.json.gz") and os.path.dirname(prof.path)
    try:
        trace = Trace(prof.path)
        assert len(trace.steps) == 2
        assert {dt.parse_mark(e["name"]).phase for e in trace.marks} == {"forward", "backward", "update"}
    finally:
        os.remove(prof.path)
    with pytest.raises(RuntimeError, match="no step was recorded"):
        with dt.Profiler(steps=1, warmup=2):
            pass


def test_profile_leaves_annotations_it_did_not_make(torch, tmp_path):
    model = make_model(torch)
    x = torch.randn(4, 32)
    with dt.annotate(model, name="Mine") as mine:
        path = dt.profile(lambda: model(x).sum().backward(), steps=1, warmup=1, path=tmp_path / "t.json", model=model)
        assert not mine.removed
    assert {dt.parse_mark(e["name"]).layer for e in Trace(path).marks} >= {"Mine"}


def test_annotated_optimizer_works_with_an_lr_scheduler(torch):
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    handle = dt.annotate_optimizer(optimizer)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == 0.5
    handle.remove()
    optimizer.step()  # the scheduler's wrapper, on top of the removed one, still works
    optimizer.zero_grad()
    assert "zero_grad" not in vars(optimizer)
