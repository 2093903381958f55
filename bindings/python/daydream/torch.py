"""daydream.torch: mark the modules of a PyTorch model in its profiler traces.

Two things, both optional, for a training script::

    import daydream, daydream.torch

    def train_step():
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    path = daydream.torch.profile(train_step, steps=3, warmup=1,
                                  model=[model, loss_fn], optimizer=optimizer)
    graph = daydream.load(path)        # tasks carry the layer of their module and its phase

- ``annotate(model)`` hooks every submodule so that each forward and each backward of a module
  is a range named ``daydream.layer:<module name>:<phase>`` in the trace (a ``record_function``
  range for the PyTorch profiler, and an NVTX range when CUDA is available, for Nsight Systems).
- ``profile(step, ...)`` / ``Profiler`` record a few training iterations with
  ``torch.profiler.profile`` into a Kineto trace file that ``daydream.load`` reads.

Importing this module does not import torch: torch is imported on the first call that needs it,
which raises ImportError with instructions when torch is not installed. The naming helpers
(``mark_name``, ``parse_mark``) work without torch. See docs/torch.md.
"""

from __future__ import annotations

import functools
import os
import tempfile
import threading
import types
import warnings
import weakref
from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence, Union

__all__ = [
    "MARK_PREFIX",
    "MARK_PHASES",
    "Mark",
    "mark_name",
    "parse_mark",
    "annotate",
    "annotate_optimizer",
    "Annotation",
    "Profiler",
    "profile",
]

MARK_PREFIX = "daydream.layer:"
"""Every range this module writes starts with this prefix."""

MARK_PHASES = ("forward", "backward", "update")
"""The phases a mark can name."""

MIN_TORCH = (1, 13)


class Mark(NamedTuple):
    """A parsed range name: the layer (module) name and the phase."""

    layer: str
    phase: str


def mark_name(layer: str, phase: str) -> str:
    """The range name for `layer` in `phase`: ``daydream.layer:<layer>:<phase>``.

    `layer` may contain ':' (the phase is what follows the last one) but not '/' (daydream joins
    nested layers with '/') nor control characters; `phase` is one of MARK_PHASES.
    """
    if phase not in MARK_PHASES:
        raise ValueError(f"phase must be one of {MARK_PHASES}, not {phase!r}")
    _check_layer(layer)
    return f"{MARK_PREFIX}{layer}:{phase}"


def parse_mark(name: str) -> Optional[Mark]:
    """The (layer, phase) a range name marks, or None when it is not a daydream mark."""
    if not isinstance(name, str) or not name.startswith(MARK_PREFIX):
        return None
    layer, sep, phase = name[len(MARK_PREFIX):].rpartition(":")
    if not sep or not layer or phase not in MARK_PHASES:
        return None
    return Mark(layer, phase)


def _check_layer(layer: str) -> None:
    if not isinstance(layer, str) or not layer:
        raise ValueError(f"a layer name must be a non-empty string, not {layer!r}")
    if "/" in layer or any(ord(c) < 32 for c in layer):
        raise ValueError(f"a layer name may not contain '/' or control characters: {layer!r}")


# --------------------------------------------------------------------------------------------
# torch, imported lazily

_torch_module = None


def _torch():
    """torch, imported on first use; ImportError with instructions when it is missing or old."""
    global _torch_module
    if _torch_module is None:
        try:
            import torch  # noqa: PLC0415 (deliberately lazy)
        except ImportError as error:
            raise ImportError(
                "daydream.torch needs PyTorch (torch >= 1.13), which is not installed: "
                "python3 -m pip install torch (see docs/torch.md)"
            ) from error
        version = tuple(int(p) for p in _leading_ints(torch.__version__, 2))
        if version < MIN_TORCH:
            raise ImportError(f"daydream.torch needs torch >= 1.13, found {torch.__version__}")
        _torch_module = torch
    return _torch_module


def _leading_ints(version: str, count: int) -> list:
    parts = []
    for piece in version.split(".")[:count]:
        digits = ""
        for c in piece:
            if not c.isdigit():
                break
            digits += c
        parts.append(int(digits or 0))
    return parts


def _profiler_enabled(torch) -> bool:
    check = getattr(torch.autograd, "_profiler_enabled", None)
    return bool(check()) if check is not None else True


class _Range:
    """One open range: a record_function range and/or an NVTX range."""

    __slots__ = ("record", "nvtx_id", "nvtx_pushed")

    def __init__(self, torch, name: str, profiler: bool, nvtx: bool, pushed: bool):
        self.record = None
        self.nvtx_id = None
        self.nvtx_pushed = False
        if profiler:
            self.record = torch.autograd.profiler.record_function(name)
            self.record.__enter__()
        if nvtx:
            nv = torch.cuda.nvtx
            if pushed or not hasattr(nv, "range_start"):
                nv.range_push(name)
                self.nvtx_pushed = True
            else:
                self.nvtx_id = nv.range_start(name)

    def close(self, torch) -> None:
        if self.nvtx_pushed:
            torch.cuda.nvtx.range_pop()
        elif self.nvtx_id is not None:
            torch.cuda.nvtx.range_end(self.nvtx_id)
        if self.record is not None:
            self.record.__exit__(None, None, None)
        self.record = self.nvtx_id = None
        self.nvtx_pushed = False


def _tensors(value, out: list, depth: int = 0) -> list:
    """The tensors in a (nested) tuple, list or dict, as module inputs and outputs are."""
    torch = _torch_module
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif depth < 8 and isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, out, depth + 1)
    elif depth < 8 and isinstance(value, dict):
        for item in value.values():
            _tensors(item, out, depth + 1)
    return out


# --------------------------------------------------------------------------------------------
# annotate

_IDLE, _OPEN, _DONE = 0, 1, 2
_warned = False


def _guarded(hook: Callable) -> Callable:
    """Hooks never break the training step: an error in one becomes a warning (once)."""

    @functools.wraps(hook)
    def run(*args, **kwargs):
        global _warned
        try:
            hook(*args, **kwargs)
        except Exception as error:  # noqa: BLE001
            if not _warned:
                _warned = True
                warnings.warn(f"daydream.torch: a hook failed, marks may be incomplete: {error!r}",
                              RuntimeWarning, stacklevel=2)
        return None

    return run


class _Layer:
    """A module being marked: its layer name, the names of its ancestors (root first) and how its
    annotation writes ranges."""

    __slots__ = ("name", "chain", "forward_mark", "backward_mark", "annotation")

    def __init__(self, name: str, chain: tuple, annotation: "Annotation"):
        self.name = name
        self.chain = chain  # (root name, ..., name)
        self.forward_mark = mark_name(name, "forward")
        self.backward_mark = mark_name(name, "backward")
        self.annotation = annotation

    def is_ancestor_of(self, other: "_Layer") -> bool:
        n = len(self.chain)
        return n < len(other.chain) and other.chain[:n] == self.chain


class _Call:
    """One forward call of a module, and the state of its backward range."""

    __slots__ = ("layer", "forward", "inputs", "pending", "state", "backward")

    def __init__(self, layer: _Layer):
        self.layer = layer
        self.forward: Optional[_Range] = None
        self.inputs = 0  # inputs that require grad (non-leaf tensors)
        self.pending = 0  # of those, inputs whose gradient has not been computed yet
        self.state = _IDLE
        self.backward: Optional[_Range] = None


class _Marker:
    """The single gradient hook of one tensor (at one version): the calls whose backward ends
    when the tensor's gradient is ready (the tensor is one of their inputs), and those whose
    backward starts then (it is one of their outputs)."""

    __slots__ = ("ends", "starts")

    def __init__(self):
        self.ends: list = []
        self.starts: list = []

    def __call__(self, grad):
        _guarded_gradient_ready(self)
        return None


class _Tracker:
    """State shared by all annotations (a model and its loss function are annotated apart but run
    in one forward/backward): the open forward calls of each thread, the tensors hooked during
    the forward passes since the last backward, and the open backward ranges of each thread."""

    def __init__(self):
        self.lock = threading.RLock()
        self.local = threading.local()
        self.markers: dict = {}  # id(tensor) -> (weakref, version, _Marker)
        self.open_backward: dict = {}  # thread id -> [_Call, ...], innermost last
        self.touched: list = []  # calls whose backward state changed in this backward pass
        self.callback_task = None  # the backward pass (graph task id) end_of_backward is queued for

    # forward -------------------------------------------------------------------------------------

    def forward_stack(self) -> list:
        stack = getattr(self.local, "forward", None)
        if stack is None:
            stack = self.local.forward = []
        return stack

    def pre_hook(self, layer: _Layer, args, kwargs) -> None:
        annotation = layer.annotation
        if not annotation._active():
            return
        stack = self.forward_stack()
        if not stack and self.open_backward:
            self.close_stale_backward()
        call = _Call(layer)
        stack.append(call)
        torch = annotation._torch
        call.forward = annotation._open(layer.forward_mark, pushed=True)
        if annotation._backward and torch.is_grad_enabled():
            tensors = _tensors(args, [])
            if kwargs:
                _tensors(kwargs, tensors)
            with self.lock:
                for tensor in tensors:
                    marker = self.marker(tensor)
                    if marker is not None:
                        marker.ends.append(call)
                        call.inputs += 1
            call.pending = call.inputs

    def post_hook(self, layer: _Layer, output) -> None:
        stack = getattr(self.local, "forward", None)
        if not stack:
            return
        if stack[-1].layer is not layer:
            # Calls above this module's whose forward hook never ran (an exception inside them,
            # on torch < 2.1 where hooks cannot be always_call) are closed; a module whose pre
            # hook wrote nothing (no profiler then) has no call.
            for i in range(len(stack) - 2, -1, -1):
                if stack[i].layer is layer:
                    break
            else:
                return
            for call in reversed(stack[i + 1:]):
                call.forward.close(call.layer.annotation._torch)
            del stack[i + 1:]
        call = stack.pop()
        annotation = layer.annotation
        torch = annotation._torch
        if annotation._backward and torch.is_grad_enabled():
            with self.lock:
                for tensor in _tensors(output, []):
                    marker = self.marker(tensor)
                    if marker is not None:
                        marker.starts.append(call)
        call.forward.close(torch)
        call.forward = None

    def marker(self, tensor) -> Optional[_Marker]:
        """The marker of this tensor at its current version, registering its hook once. Leaf
        tensors (inputs, parameters) are not hooked: their hooks would outlive the graph."""
        if not tensor.requires_grad or tensor.grad_fn is None:
            return None
        key = id(tensor)
        version = tensor._version
        entry = self.markers.get(key)
        if entry is not None and entry[0]() is tensor and entry[1] == version:
            return entry[2]
        marker = _Marker()
        try:
            tensor.register_hook(marker)
        except RuntimeError:  # a tensor that cannot take hooks
            return None
        self.markers[key] = (weakref.ref(tensor, functools.partial(self._forget, key)), version, marker)
        return marker

    def _forget(self, key: int, ref) -> None:
        with self.lock:
            entry = self.markers.get(key)
            if entry is not None and entry[0] is ref:
                del self.markers[key]

    # backward ------------------------------------------------------------------------------------

    def gradient_ready(self, marker: _Marker) -> None:
        """A gradient hook fired: end the backward ranges of the calls that took this tensor as
        input (once all their inputs have gradients), then start those of the calls that produced
        it, outermost first, closing first the ranges of this thread that are not their ancestors
        so that ranges stay nested."""
        with self.lock:
            self.queue_end_of_backward()
            for call in marker.ends:
                call.pending -= 1
                if call.pending > 0:
                    continue
                if call.state == _OPEN:
                    self.close_through(call)
                elif call.state == _IDLE:
                    call.state = _DONE  # no gradient reached its outputs first: no range
                    self.touched.append(call)
            if not marker.starts:
                return
            stack = self.open_backward.setdefault(threading.get_ident(), [])
            for call in sorted(marker.starts, key=lambda c: len(c.layer.chain)):
                if call.state != _IDLE or call.layer.annotation._removed:
                    continue
                while stack and not stack[-1].layer.is_ancestor_of(call.layer):
                    self.close_top(stack)
                call.backward = call.layer.annotation._open(call.layer.backward_mark, pushed=False)
                call.state = _OPEN
                self.touched.append(call)
                stack.append(call)

    def queue_end_of_backward(self) -> None:
        """Once per backward pass, asks the engine to call end_of_backward when it is done. A
        pass that raised never calls it: its ranges are closed when the next pass starts."""
        current = getattr(_torch_module._C, "_current_graph_task_id", None)
        task = current() if current is not None else True
        if self.callback_task is not None:
            if task is True or task == self.callback_task:
                return
            self.end_of_backward()
        try:
            _torch_module.autograd.Variable._execution_engine.queue_callback(self.end_of_backward)
            self.callback_task = task
        except (AttributeError, RuntimeError):
            pass

    def close_stale_backward(self) -> None:
        """A forward pass starts outside any backward pass while backward ranges are open on
        this thread: the pass they belong to raised. Close them."""
        current = getattr(_torch_module._C, "_current_graph_task_id", None)
        if current is None:  # older torch: cannot tell; let the next backward pass queue its end
            with self.lock:
                self.callback_task = None
            return
        if current() != -1:
            return  # a forward run inside backward (activation checkpointing)
        with self.lock:
            if self.open_backward.get(threading.get_ident()):
                self.end_of_backward()

    def close_top(self, stack: list) -> None:
        call = stack.pop()
        if call.backward is not None:
            call.backward.close(call.layer.annotation._torch)
            call.backward = None
        call.state = _DONE

    def close_through(self, call: _Call) -> None:
        for stack in self.open_backward.values():
            if call in stack:
                while stack:
                    top = stack[-1]
                    self.close_top(stack)
                    if top is call:
                        return

    def end_of_backward(self) -> None:
        """Runs when the autograd engine has finished a backward pass: closes every backward range
        still open (the model's own, whose input needs no gradient, ends here) and resets the
        calls, so that a second backward through the same graph (retain_graph=True) is marked
        too."""
        with self.lock:
            for stack in self.open_backward.values():
                while stack:
                    self.close_top(stack)
            self.open_backward.clear()
            for call in self.touched:
                call.state = _IDLE
                call.pending = call.inputs
            self.touched.clear()
            self.markers.clear()
            self.callback_task = None

    def forget_annotation(self, annotation: "Annotation") -> None:
        """Closes the ranges of a removed annotation still open on this thread and any thread's
        backward stack."""
        with self.lock:
            for stack in self.open_backward.values():
                for call in [c for c in stack if c.layer.annotation is annotation]:
                    self.close_through(call)
        stack = self.forward_stack()
        for call in reversed(stack):
            if call.layer.annotation is annotation:
                call.forward.close(annotation._torch)
        stack[:] = [call for call in stack if call.layer.annotation is not annotation]


_TRACKER = _Tracker()
_guarded_gradient_ready = _guarded(_TRACKER.gradient_ready)
_guarded_pre_hook = _guarded(_TRACKER.pre_hook)
_guarded_post_hook = _guarded(_TRACKER.post_hook)


class Annotation:
    """The hooks `annotate` or `annotate_optimizer` installed. `remove()` takes them all off (also
    on leaving a ``with`` block)."""

    def __init__(self, torch, nvtx: bool, backward: bool):
        self._torch = torch
        self._layers: dict = {}  # module -> _Layer
        self._nvtx = nvtx
        self._backward = backward
        self._handles: list = []
        self._undo: list = []
        self._objects: list = []  # what this annotation hooks (modules, an optimizer)
        self._removed = False

    @property
    def layers(self) -> list:
        """The layer names marked: the root's, then each submodule's qualified name."""
        return [layer.name for layer in self._layers.values()]

    @property
    def removed(self) -> bool:
        """Whether `remove()` was called."""
        return self._removed

    def remove(self) -> None:
        """Removes every hook (ranges still open are closed). Calling it again does nothing."""
        if self._removed:
            return
        self._removed = True
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        _TRACKER.forget_annotation(self)
        for obj in self._objects:
            if _ANNOTATED.get(obj) is self:
                del _ANNOTATED[obj]
        self._objects.clear()

    def __enter__(self) -> "Annotation":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "removed" if self._removed else f"{len(self._layers)} layers"
        return f"<daydream.torch.Annotation {state}>"

    def _active(self) -> bool:
        return not self._removed and (self._nvtx or _profiler_enabled(self._torch))

    def _open(self, name: str, pushed: bool) -> _Range:
        return _Range(self._torch, name, _profiler_enabled(self._torch), self._nvtx, pushed)


_ANNOTATED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # module -> Annotation


def _register_forward_hooks(module, pre: Callable, post: Callable) -> list:
    """Forward pre/post hooks; kwargs and always_call where this torch has them (2.0 / 2.1)."""
    try:
        pre_handle = module.register_forward_pre_hook(lambda m, args, kwargs: pre(args, kwargs), with_kwargs=True)
    except TypeError:  # torch < 2.0
        pre_handle = module.register_forward_pre_hook(lambda m, args: pre(args, None))
    try:
        post_handle = module.register_forward_hook(lambda m, args, output: post(output), always_call=True)
    except TypeError:  # torch < 2.1
        post_handle = module.register_forward_hook(lambda m, args, output: post(output))
    return [pre_handle, post_handle]


def annotate(model, name: Optional[str] = None, *, backward: bool = True, nvtx: Optional[bool] = None) -> Annotation:
    """Marks every module of `model` in profiler traces; returns the handle (``.remove()``).

    Each forward call of a module is a range ``daydream.layer:<layer>:forward``, from its forward
    pre-hook to its forward hook, so ranges nest as modules do (model > block > layer). With
    `backward` (default), each module's backward is a range ``daydream.layer:<layer>:backward`` on
    the thread that runs it (the autograd engine's), from the moment the gradient of its output
    is ready to the moment the gradients of all its inputs are (tensor hooks, see docs/torch.md).

    The layer of the root is `name` (default: the model's class name); every submodule's is its
    qualified name in the model (``model.named_modules()``: ``"layer1.0.conv1"``), so daydream
    gives a task the layer path ``Model/layer1/layer1.0/layer1.0.conv1``.

    Ranges are ``torch.profiler.record_function`` ranges (written only while a profiler runs) and,
    with `nvtx` (default: when CUDA is available), NVTX ranges for Nsight Systems. Without either,
    the hooks return at once.
    """
    torch = _torch()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"annotate() takes a torch.nn.Module, not {type(model).__name__}")
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError("annotate() cannot hook a TorchScript module: annotate the module before scripting it")
    if model in _ANNOTATED:
        raise ValueError("this model is already annotated: call .remove() on its Annotation first")
    root = type(model).__name__ if name is None else name
    _check_layer(root)
    if nvtx is None:
        nvtx = bool(torch.cuda.is_available())

    annotation = Annotation(torch, nvtx=nvtx, backward=backward)
    for qualified, module in model.named_modules():
        if module in _ANNOTATED or isinstance(module, torch.jit.ScriptModule):
            continue  # already marked by another annotation, or not hookable
        if qualified:
            parts = qualified.replace("/", "_").split(".")
            chain = (root,) + tuple(".".join(parts[: i + 1]) for i in range(len(parts)))
        else:
            chain = (root,)
        layer = _Layer(chain[-1], chain, annotation)
        annotation._layers[module] = layer
        pre = functools.partial(_guarded_pre_hook, layer)
        post = functools.partial(_guarded_post_hook, layer)
        annotation._handles.extend(_register_forward_hooks(module, pre, post))
        annotation._objects.append(module)
        _ANNOTATED[module] = annotation
    return annotation


def annotate_optimizer(optimizer, name: str = "optimizer", *, nvtx: Optional[bool] = None) -> Annotation:
    """Marks `optimizer.step()` and `optimizer.zero_grad()` as ``daydream.layer:<name>:update``.

    Both methods are wrapped on this optimizer object (as an LR scheduler wraps `step`), so that
    the mark encloses PyTorch's own ``Optimizer.step#...`` range. Returns the handle
    (``.remove()``); after it, a wrapper that cannot be taken off (another wrapper was put on top
    of it) only passes calls through.
    """
    torch = _torch()
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"annotate_optimizer() takes a torch.optim.Optimizer, not {type(optimizer).__name__}")
    if optimizer in _ANNOTATED:
        raise ValueError("this optimizer is already annotated: call .remove() on its Annotation first")
    _check_layer(name)
    if nvtx is None:
        nvtx = bool(torch.cuda.is_available())
    annotation = Annotation(torch, nvtx=nvtx, backward=False)
    annotation._objects.append(optimizer)
    _ANNOTATED[optimizer] = annotation
    mark = mark_name(name, "update")

    def wrap(attribute: str) -> None:
        original = getattr(optimizer, attribute)
        had_own = attribute in vars(optimizer)

        def wrapped(self, *args, **kwargs):
            if not annotation._active():
                return original(*args, **kwargs)
            marked = annotation._open(mark, pushed=True)
            try:
                return original(*args, **kwargs)
            finally:
                marked.close(torch)

        functools.update_wrapper(wrapped, getattr(original, "__func__", original))
        installed = types.MethodType(wrapped, optimizer)  # a bound method, as schedulers expect
        setattr(optimizer, attribute, installed)

        def undo():
            if vars(optimizer).get(attribute) is installed:
                if had_own:
                    setattr(optimizer, attribute, original)
                else:
                    delattr(optimizer, attribute)

        annotation._undo.append(undo)

    wrap("step")
    wrap("zero_grad")
    return annotation


# --------------------------------------------------------------------------------------------
# profile

ModuleArg = Union[Any, Sequence[Any], None]


class Profiler:
    """Records a few training iterations into a Kineto trace file that daydream reads.

    A context manager around ``torch.profiler.profile`` with the schedule ``wait`` skipped steps,
    ``warmup`` steps profiled and thrown away, then ``steps`` recorded steps (each a
    ``ProfilerStep#N`` range). Call ``step()`` at the end of each training iteration; it returns
    True once the recorded steps are done. The trace is written to ``path`` when they are (or on
    leaving the block, if fewer ran)::

        with daydream.torch.Profiler(steps=3, model=model, optimizer=optimizer) as prof:
            for batch in loader:
                train_step(batch)
                if prof.step():
                    break
        graph = daydream.load(prof.path)

    `model` (a module or a list of modules, e.g. ``[model, loss_fn]``) and `optimizer` are
    annotated while profiling (see `annotate`, `annotate_optimizer`) unless they already are.
    `path` defaults to a new ``daydream-*.pt.trace.json.gz`` file in the temporary directory; a
    name ending in ``.gz`` is gzip-compressed. Activities: CPU, and CUDA when available.
    `record_shapes`, `with_stack` and `profile_memory` are off by default (they slow the job and
    grow the trace); other keyword arguments go to ``torch.profiler.profile``.
    """

    def __init__(self, steps: int = 3, warmup: int = 1, *, wait: int = 0, path: Union[str, os.PathLike, None] = None,
                 model: ModuleArg = None, optimizer=None, activities: Optional[Iterable] = None,
                 record_shapes: bool = False, with_stack: bool = False, profile_memory: bool = False,
                 nvtx: Optional[bool] = None, **profiler_kwargs):
        for label, value, least in (("steps", steps, 1), ("warmup", warmup, 0), ("wait", wait, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{label} must be an integer >= {least}, not {value!r}")
        self.steps, self.warmup, self.wait = steps, warmup, wait
        self._requested_path = None if path is None else os.fspath(path)
        self._models = [] if model is None else (list(model) if isinstance(model, (list, tuple)) else [model])
        self._optimizer = optimizer
        self._activities = activities
        self._options = dict(record_shapes=record_shapes, with_stack=with_stack, profile_memory=profile_memory,
                             **profiler_kwargs)
        self._nvtx = nvtx
        self._annotations: list = []
        self._profiler = None
        self._taken = 0
        self.path: Optional[str] = None
        """The trace file, once written."""

    @property
    def total_steps(self) -> int:
        """wait + warmup + steps: how many times to call `step()`."""
        return self.wait + self.warmup + self.steps

    @property
    def done(self) -> bool:
        """Whether the recorded steps are all done."""
        return self._taken >= self.total_steps

    def __enter__(self) -> "Profiler":
        torch = _torch()
        if self._profiler is not None:
            raise RuntimeError("this Profiler is already running")
        from torch.profiler import ProfilerActivity, schedule  # noqa: PLC0415

        activities = self._activities
        if activities is None:
            activities = [ProfilerActivity.CPU]
            if torch.cuda.is_available():
                activities.append(ProfilerActivity.CUDA)
        if self._requested_path is None:
            fd, path = tempfile.mkstemp(prefix="daydream-", suffix=".pt.trace.json.gz")
            os.close(fd)
            self._target = path
        else:
            self._target = self._requested_path
            parent = os.path.dirname(os.path.abspath(self._target))
            os.makedirs(parent, exist_ok=True)
        try:
            for module in self._models:
                if module not in _ANNOTATED:
                    self._annotations.append(annotate(module, nvtx=self._nvtx))
            if self._optimizer is not None and self._optimizer not in _ANNOTATED:
                self._annotations.append(annotate_optimizer(self._optimizer, nvtx=self._nvtx))
            self._profiler = torch.profiler.profile(
                activities=list(activities),
                schedule=schedule(wait=self.wait, warmup=self.warmup, active=self.steps, repeat=1),
                on_trace_ready=self._write,
                **self._options,
            )
            self._profiler.__enter__()
        except BaseException:
            self._remove_annotations()
            if self._requested_path is None:
                os.remove(self._target)
            raise
        self._taken = 0
        return self

    def step(self) -> bool:
        """Ends one training iteration. Returns True once all recorded steps are done."""
        if self._profiler is None:
            raise RuntimeError("Profiler.step() outside its with block")
        if not self.done:
            self._profiler.step()
            self._taken += 1
        return self.done

    def __exit__(self, exc_type, exc, tb) -> None:
        profiler, self._profiler = self._profiler, None
        try:
            if profiler is not None:
                profiler.__exit__(exc_type, exc, tb)
        finally:
            self._remove_annotations()
        if self.path is None and self._requested_path is None:
            try:
                os.remove(self._target)  # the empty file made for the default path
            except OSError:
                pass
        if exc_type is None and self.path is None:
            raise RuntimeError(
                f"no step was recorded: step() ran {self._taken} times, fewer than wait + warmup + 1 = "
                f"{self.wait + self.warmup + 1}")

    def _write(self, profiler) -> None:
        profiler.export_chrome_trace(self._target)
        self.path = self._target

    def _remove_annotations(self) -> None:
        for annotation in self._annotations:
            annotation.remove()
        self._annotations.clear()


def profile(step: Callable[[], Any], steps: int = 3, warmup: int = 1, *, wait: int = 0,
            path: Union[str, os.PathLike, None] = None, model: ModuleArg = None, optimizer=None,
            **options) -> str:
    """Runs ``step()`` wait + warmup + steps times under the profiler; returns the trace's path.

    `step` runs one training iteration (forward, backward, optimizer step). The other arguments
    are those of `Profiler`: `steps` recorded iterations after `warmup` thrown-away ones, `model`
    and `optimizer` annotated while profiling, `path` (default: a new file in the temporary
    directory), and profiler options.
    """
    with Profiler(steps, warmup, wait=wait, path=path, model=model, optimizer=optimizer, **options) as prof:
        while not prof.done:
            step()
            prof.step()
    return prof.path
