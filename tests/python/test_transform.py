"""TaskSet changes, Graph.insert / remove / copy, and the exceptions they raise."""

import math

import pytest

import daydream


def llround(x: float) -> int:
    """C++ std::llround for x >= 0: nearest integer, halves away from zero."""
    return math.floor(x + 0.5)


@pytest.fixture
def g(small_trace):
    return daydream.load(small_trace)


def test_taskset_basics(g):
    kernels = g.select(kind="kernel")
    assert len(kernels) == 3
    assert kernels.ids == sorted(kernels.ids)
    assert [t.id for t in kernels] == kernels.ids
    assert kernels.total_duration_ns == 200_000 + 100_000 + 150_000
    assert g.task(kernels.ids[0]) in kernels
    assert g.select(kind="cpu").ids[0] not in kernels.ids
    assert "3 tasks" in repr(kernels)
    assert kernels.graph is g or len(kernels.graph) == len(g)


def test_scale_rounds_to_nearest_ns(g):
    kernels = g.select(kind="kernel")
    assert kernels.scale(1 / 3) is kernels  # chains
    third = 1 / 3
    assert [t.duration_ns for t in kernels] == [llround(d * third) for d in (200_000, 100_000, 150_000)]
    (relu,) = g.select(kind="kernel", name="relu")
    relu.duration_ns = 5
    g.select(kind="kernel", name="relu").scale(0.5)  # 2.5 rounds away from zero, as C++ std::llround
    assert relu.duration_ns == 3
    g.select(kind="kernel", name="relu").scale(0)
    assert relu.duration_ns == 0


@pytest.mark.parametrize("factor", [float("nan"), float("inf"), -float("inf"), -0.5])
def test_scale_rejects_bad_factors(g, factor):
    kernels = g.select(kind="kernel")
    before = kernels.total_duration_ns
    with pytest.raises(ValueError, match="factor"):
        kernels.scale(factor)
    assert kernels.total_duration_ns == before


def test_scale_rejects_non_numbers(g):
    with pytest.raises(TypeError):
        g.select(kind="kernel").scale("2")


def test_set_duration_and_shrink(g):
    kernels = g.select(kind="kernel")
    kernels.set_duration(1000)
    assert {t.duration_ns for t in kernels} == {1000}
    kernels.shrink(300)
    assert {t.duration_ns for t in kernels} == {700}
    kernels.shrink(10_000)  # not below zero
    assert {t.duration_ns for t in kernels} == {0}
    with pytest.raises(ValueError):
        kernels.set_duration(-1)
    with pytest.raises(ValueError):
        kernels.shrink(-1)
    with pytest.raises(ValueError):
        kernels.set_duration(math.nan)
    assert {t.duration_ns for t in kernels} == {0}


def test_remove_bridges_and_twice_raises(g):
    n = len(g)
    (relu,) = g.select(kind="kernel", name="relu")
    preds = {t.id for t in relu.predecessors}
    succs = {t.id for t in relu.successors}
    g.remove(relu)
    assert relu.removed and len(g) == n - 1
    assert relu.predecessors == [] and relu.successors == []
    for p in preds:  # every predecessor now reaches every successor directly
        assert succs <= {t.id for t in g.task(p).successors}
    assert relu.id not in g.select().ids
    assert g.num_tasks == n
    with pytest.raises(daydream.Error, match="removed"):
        g.remove(relu)
    with pytest.raises(daydream.Error):
        g.remove(relu.id)


def test_taskset_remove(g):
    memcpy = g.select(kind="memcpy")
    memcpy.remove()
    assert len(g.select(kind="memcpy")) == 0
    with pytest.raises(daydream.Error):
        memcpy.remove()
    r = g.simulate()
    assert r.start_ns(memcpy.ids[0]) is None


def test_copy_is_independent(g):
    c = g.copy()
    assert len(c) == len(g) and c.edge_counts() == g.edge_counts()
    c.select(kind="kernel").scale(0.5)
    c.remove(c.select(kind="memcpy").ids[0])
    c.insert("allreduce", 1000, "nccl", after=c.select(kind="kernel").ids[:1])
    assert g.select(kind="kernel").total_duration_ns == 450_000
    assert len(g.select(kind="memcpy")) == 1
    assert "nccl" not in g.units and "nccl" in c.units
    assert len(c) == len(g)  # one removed, one inserted
    assert g.simulate().total_ns != c.simulate().total_ns
    import copy

    d = copy.deepcopy(g)
    d.select().set_duration(0)
    assert g.select().total_duration_ns > 0 and copy.copy(g).select().total_duration_ns > 0


def test_insert_on_new_channel(g):
    (conv,) = g.select(name="convolve")
    (sync,) = g.select(name="cudaDeviceSynchronize", iteration=0)
    t = g.insert("nccl:all_reduce", 50_000, "nccl stream", after=[conv], before=[sync])
    assert isinstance(t, daydream.Task)
    assert (t.name, t.kind, t.unit, t.duration_ns) == ("nccl:all_reduce", "communication", "nccl stream", 50_000)
    assert t.iteration == 0  # from its first predecessor
    assert t.predecessors == [conv] and t.successors == [sync]
    assert g.units[-1] == "nccl stream"
    assert t.id in g.select(unit_kind="comm_channel").ids
    assert g.edge_counts()["communication"] == 2
    # an existing unit by name or id, a kernel, a single task instead of a list, explicit edge types
    k = g.insert("extra_kernel", 1000, g.units.index("GPU 0 stream 7"), kind="kernel", after=conv,
                 after_type="gpu_sequential")
    assert k.unit == "GPU 0 stream 7" and k.kind == "kernel"
    c = g.insert("cpu_work", 10, "thread 1", kind="cpu", after=[k.id], before=[sync.id], after_type="sync",
                 before_type="cpu_sequential")
    assert c.predecessors == [k]
    worker = g.insert("worker", 10, "my thread", kind="cpu", unit_kind="cpu_thread")
    assert worker.id in g.select(unit_kind="cpu_thread").ids
    assert g.simulate().end_ns(t) >= g.simulate().end_ns(conv) + 50_000


def test_insert_validates(g):
    other = g.copy()
    (conv,) = g.select(name="convolve")
    units = list(g.units)
    with pytest.raises(ValueError, match="belongs to another graph"):
        g.insert("x", 10, "nccl", after=[other.task(conv.id)])
    with pytest.raises(ValueError, match="belongs to another graph"):
        g.insert("x", 10, "GPU 0 stream 7", kind="kernel", before=[other.task(conv.id)])
    with pytest.raises(ValueError):
        g.insert("x", -1, "nccl", after=[conv])
    with pytest.raises(ValueError, match="task kind"):
        g.insert("x", 1, "nccl", kind="gpu")
    with pytest.raises(ValueError, match="edge type"):
        g.insert("x", 1, "nccl", after=[conv], after_type="magic")
    with pytest.raises(ValueError, match="unit kind"):
        g.insert("x", 1, "new unit", unit_kind="tpu_core")
    with pytest.raises(ValueError, match="no unit"):
        g.insert("x", 1, 42)
    with pytest.raises(IndexError):
        g.insert("x", 1, "nccl", after=[123456])
    with pytest.raises(ValueError, match="another graph"):
        g.remove(other.task(conv.id))
    assert g.units == units and len(g) == len(other)


def test_insert_that_closes_a_cycle_raises(g):
    (conv,) = g.select(name="convolve")
    (sync,) = g.select(name="cudaDeviceSynchronize", iteration=0)
    n, units, edges = len(g), list(g.units), g.edge_counts()
    # sync depends on conv (through the stream), so "after sync, before conv" is a cycle
    with pytest.raises(daydream.Error, match="cycle"):
        g.insert("loop", 10, "GPU 0 stream 7", kind="kernel", after=[sync], before=[conv])
    with pytest.raises(daydream.Error, match="cycle"):
        g.insert("loop", 10, "new channel", after=[sync], before=[conv])
    with pytest.raises(daydream.Error, match="cycle"):
        g.insert("loop", 10, "new channel", after=[conv], before=[conv])
    # refused inserts leave the graph (and its units) unchanged
    assert (len(g), g.units, g.edge_counts()) == (n, units, edges)
    (relu,) = g.select(kind="kernel", name="relu")
    g.remove(relu)
    with pytest.raises(daydream.Error, match="removed"):
        g.insert("x", 10, "new channel", after=[relu])
    with pytest.raises(daydream.Error, match="removed"):
        g.insert("x", 10, "nccl2", after=[conv], before=[relu])
    assert len(g) == n - 1 and g.units == units
    assert g.simulate().total_ns > 0
