"""docs/scenarios.ipynb runs from top to bottom: its code cells are executed in order in one
namespace, without Jupyter, with matplotlib's Agg backend; then its final state is checked."""

import json
import os
import shutil

import pytest

import daydream
from conftest import EXAMPLE_TRACE, REPO

NOTEBOOK = REPO / "docs" / "scenarios.ipynb"
NOTEBOOK_SCENARIOS = ("faster_gpu", "amp", "dataloader_workers")


def code_cells() -> list[str]:
    notebook = json.loads(NOTEBOOK.read_text())
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


@pytest.fixture
def run_cells():
    """Runs code cells in one namespace; removes the notebook's output folder (OUT) afterwards."""
    namespaces = []

    def run(cells: list[str]) -> dict:
        namespace = {"__name__": "__main__"}
        namespaces.append(namespace)
        for index, source in enumerate(cells):
            exec(compile(source, f"{NOTEBOOK.name}, code cell {index + 1}", "exec"), namespace)
        return namespace

    yield run
    for namespace in namespaces:
        if "OUT" in namespace:
            shutil.rmtree(namespace["OUT"], ignore_errors=True)


def test_notebook_is_committed_without_outputs():
    notebook = json.loads(NOTEBOOK.read_text())
    assert notebook["nbformat"] == 4
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code)
    assert not any(line.lstrip().startswith(("%", "!")) for source in code_cells() for line in source.splitlines())


def test_notebook_runs(tmp_path, monkeypatch, run_cells):
    pytest.importorskip("matplotlib", reason="the notebook plots with matplotlib")
    placeholders = [s["name"] for s in daydream.scenarios()
                    if s["name"] in NOTEBOOK_SCENARIOS and s["summary"] == "(not yet written)"]
    if placeholders:
        pytest.skip(f"the notebook's scenarios {placeholders} are not yet written")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("DAYDREAM_EXAMPLE_TRACE", str(EXAMPLE_TRACE))
    monkeypatch.chdir(tmp_path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        state = run_cells(code_cells())
    finally:
        plt.close("all")

    df = state["df"]
    assert df["scenario"].tolist() == [
        "faster_gpu:factor=1.5", "faster_gpu:factor=2", "faster_gpu:factor=4", "amp",
        "dataloader_workers:workers=2", "dataloader_workers:workers=4", "kernels and copies 2x faster"]
    assert df["error"].tolist() == [None] * 7
    assert df["factor"].tolist()[:3] == [1.5, 2, 4] and df["workers"].tolist()[4:6] == [2, 4]
    speedups = df["speedup"].tolist()
    assert 1 < speedups[0] < speedups[1] < speedups[2]  # a faster GPU never slows the example down
    assert state["prediction"].scenario == "amp"
    out = state["OUT"]
    for name in ("sweep.png", "timeline.png"):
        assert (out / name).stat().st_size > 10_000, name  # a real image
    events = json.loads((out / "amp_timeline.json").read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)
    assert not list(tmp_path.iterdir())  # nothing written to the working folder


def test_notebook_finds_the_bundled_trace_from_its_folder(monkeypatch, run_cells):
    monkeypatch.delenv("DAYDREAM_EXAMPLE_TRACE", raising=False)
    monkeypatch.chdir(NOTEBOOK.parent)  # where Jupyter starts the kernel
    state = run_cells(code_cells()[:1])
    assert os.path.samefile(state["graph"].source_path, EXAMPLE_TRACE)
