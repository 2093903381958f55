"""The Python layer cannot crash the interpreter (issue 18, item 5): None or a wrong type where a
Graph is expected raises TypeError before any C++ runs; a change to a graph never overlaps a
read of it from another thread; a schedule callable that changes the graph is refused."""

import inspect
import subprocess
import sys
import textwrap

import pytest

import daydream
from conftest import EXAMPLE_TRACE, releases_gil

# Every public function of the package that takes a graph first, with plausible other arguments.
GRAPH_FUNCTIONS = {
    "predict": ("amp",), "apply_scenario": ("amp",), "sweep": (["amp"],), "bottleneck": (),
    "roofline": (), "validate": (str(EXAMPLE_TRACE), "amp"),
}


@pytest.mark.parametrize("name", sorted(GRAPH_FUNCTIONS))
@pytest.mark.parametrize("bad", [None, 0, "not a graph"], ids=["None", "int", "str"])
def test_a_function_given_no_graph_raises_type_error(name, bad):
    if name == "validate" and isinstance(bad, str):
        pytest.skip("validate takes a path there")
    with pytest.raises(TypeError):
        getattr(daydream, name)(bad, *GRAPH_FUNCTIONS[name])


def test_no_function_or_method_crashes_on_none():
    """Every callable of daydream and every method of its classes, called with None for each of
    its first three arguments, in a child process: it may raise, it must not die of a signal."""
    script = textwrap.dedent(f"""
        import inspect, daydream, daydream._core as core
        targets = [getattr(daydream, n) for n in dir(daydream) if not n.startswith("__")]
        targets += [getattr(core, n) for n in dir(core) if not n.startswith("__")]
        called = 0
        for target in targets:
            members = [target] if not inspect.isclass(target) else [
                getattr(target, n) for n in dir(target) if not n.startswith("__")]
            for member in members:
                if not callable(member) or inspect.isclass(member) or getattr(member, "__name__", "") in (
                        "run_cli", "_run_cli", "start", "stop", "flush", "write_timeline", "plot_sweep",
                        "plot_timeline", "plot_roofline"):
                    continue
                for count in range(4):
                    try:
                        member(*([None] * count))
                    except BaseException:
                        pass
                    called += 1
        print(called)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-3000:]}"
    assert int(done.stdout.split()[-1]) > 400  # it really called them


def test_apply_scenario_keeps_the_gil_so_no_thread_reads_a_graph_half_changed(example_trace):
    graph = daydream.load(example_trace)
    assert not releases_gil(lambda: daydream.apply_scenario(graph, "faster_gpu:factor=1.01"), tries=20)
    assert releases_gil(lambda: daydream.predict(graph, "faster_gpu:factor=2"), tries=50)  # on a copy


def test_a_schedule_callable_that_changes_the_graph_is_refused(example_trace):
    graph = daydream.load(example_trace)
    tasks = len(graph)

    def inserting(task):
        graph.insert("extra", 10, "new channel")
        return 0

    with pytest.raises(ValueError, match="changed the graph"):
        graph.simulate(inserting)
    assert len(graph) == tasks + 1  # the one change made before the refusal
    graph.simulate(lambda task: task.duration_ns)  # reading is fine


# --- times beyond what daydream accepts (issue 18, item 1): refused, never wrapped around ---

@pytest.mark.parametrize("value", [2**63 - 1, 2**64, 86_400_000_000_001, 1e30, float("inf"), -1])
def test_a_duration_beyond_one_day_is_refused(example_trace, value):
    graph = daydream.load(example_trace)
    task = graph.task(0)
    before = task.duration_ns
    with pytest.raises(ValueError, match="from 0 to one day"):
        task.duration_ns = value
    assert task.duration_ns == before
    task.duration_ns = 86_400_000_000_000  # exactly one day is accepted


def test_a_scale_beyond_one_day_names_the_task_and_the_factor(example_trace):
    graph = daydream.load(example_trace)
    with pytest.raises(daydream.Error, match=r"scale: task \d+ '.*' would last .* longer than one day"):
        graph.select(kind="kernel").scale(1e300)


def test_a_tiny_faster_gpu_factor_blames_the_factor_not_a_negative_duration(example_trace):
    graph = daydream.load(example_trace)
    with pytest.raises(daydream.Error) as error:
        daydream.predict(graph, "faster_gpu:factor=1e-300")
    assert "longer than one day" in str(error.value) and "negative" not in str(error.value)


# 7 keys of 10 values: 10^7 specs, which sweep expanded before counting them.
SEVEN_KEYS_OF_TEN = "ddp:" + ",".join(f"{key}=" + "|".join(str(v) for v in range(1, 11))
                                      for key in ("machines", "gpus", "bucket", "first_bucket", "params",
                                                  "bytes_per_param", "latency"))


def test_a_sweep_grid_is_counted_before_it_is_expanded(example_trace):
    graph = daydream.load(example_trace)
    grid = "faster_gpu:factor=1|2|3|4|5|6|7|8|9|10,kind=kernel|all"  # 20 specs
    with pytest.raises(daydream.Error, match="more than 100000 combinations"):
        daydream.sweep(graph, [SEVEN_KEYS_OF_TEN])
    assert daydream.MAX_SPECS == 100_000
    with pytest.raises(daydream.Error, match="more than 19 combinations"):
        daydream.sweep(graph, [grid], max_specs=19)
    with pytest.raises(daydream.Error, match="more than 0 combinations"):
        daydream.sweep(graph, ["amp", "amp"], max_specs=1)
    with pytest.raises(ValueError, match="max_specs"):
        daydream.sweep(graph, ["amp"], max_specs=0)


def test_the_cli_sweep_counts_its_specs_before_expanding(cli, example_trace):
    import subprocess
    done = subprocess.run([cli, "sweep", example_trace, "--scenario", SEVEN_KEYS_OF_TEN], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert "the grid has more than 100000 combinations" in done.stderr, done.stderr
    done = subprocess.run([cli, "sweep", example_trace, "--scenario", "faster_gpu:factor=2|4", "--max-specs", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "more than 1 combinations" in done.stderr, done.stderr
