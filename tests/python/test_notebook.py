"""docs/scenarios.ipynb is stored with its outputs (so its tables and plots show on the repository
page) and those outputs are true: the test re-runs it from top to bottom as Jupyter would (in
docs/, matplotlib's Agg backend, tests/python/notebook_exec.py) and compares what each cell shows
now with what the file stores. Refresh the file with:

    PYTHONPATH=build/python python3 tests/python/notebook_exec.py docs/scenarios.ipynb"""

import base64
import json
import shutil

import pytest

import daydream
from conftest import EXAMPLE_TRACE, REPO
from notebook_exec import execute, run_cell

NOTEBOOK = REPO / "docs" / "scenarios.ipynb"
NOTEBOOK_SCENARIOS = ("faster_gpu", "amp", "dataloader_workers")
REFRESH = f"re-run: PYTHONPATH=build/python python3 tests/python/notebook_exec.py {NOTEBOOK.relative_to(REPO)}"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def stored_notebook() -> dict:
    return json.loads(NOTEBOOK.read_text())


def code_cells(notebook: dict) -> list[dict]:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def shown_text(output: dict) -> list[str]:
    """What an output shows as text, as words: a newer pandas may align columns differently, but
    a changed number or name is a stale notebook."""
    text = output.get("text") or output.get("data", {}).get("text/plain", [])
    return "".join(text).split()


def kinds(cell: dict) -> list[str]:
    return [output.get("name") or output["output_type"] + ("(image)" if "image/png" in output.get("data", {}) else "")
            for output in cell["outputs"]]


def png_bytes(output: dict) -> bytes:
    return base64.b64decode("".join(output["data"]["image/png"]))


@pytest.fixture(scope="module")
def rerun():
    """The notebook executed now, and its final namespace (its output folder OUT removed after)."""
    pytest.importorskip("matplotlib", reason="the notebook plots with matplotlib")
    placeholders = [s["name"] for s in daydream.scenarios()
                    if s["name"] in NOTEBOOK_SCENARIOS and s["summary"] == "(not yet written)"]
    if placeholders:
        pytest.skip(f"the notebook's scenarios {placeholders} are not yet written")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAYDREAM_EXAMPLE_TRACE", raising=False)  # found from docs/, as in Jupyter
        patch.setenv("MPLBACKEND", "Agg")
        before = sorted(NOTEBOOK.parent.rglob("*"))
        executed, state = execute(stored_notebook(), NOTEBOOK.parent)
        after = sorted(NOTEBOOK.parent.rglob("*"))
    yield executed, state
    shutil.rmtree(state["OUT"], ignore_errors=True)
    assert before == after, "the notebook wrote into docs/"


def test_notebook_is_stored_with_its_outputs():
    notebook = stored_notebook()
    assert notebook["nbformat"] == 4
    cells = code_cells(notebook)
    assert [cell["execution_count"] for cell in cells] == list(range(1, len(cells) + 1)), REFRESH
    images = [output for cell in cells for output in cell["outputs"] if "image/png" in output.get("data", {})]
    assert len(images) == 2, f"the sweep plot and the timeline; {REFRESH}"
    assert all(png_bytes(image).startswith(PNG_SIGNATURE) for image in images)
    tables = [output for cell in cells for output in cell["outputs"] if "text/html" in output.get("data", {})]
    assert any("<table" in "".join(table["data"]["text/html"]) for table in tables)  # the sweep as a table
    assert not any(line.lstrip().startswith(("%", "!"))
                   for cell in cells for line in "".join(cell["source"]).splitlines())  # plain Python
    assert NOTEBOOK.read_text() == json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_stored_outputs_match_a_rerun(rerun):
    executed, _ = rerun
    for number, (stored, now) in enumerate(zip(code_cells(stored_notebook()), code_cells(executed)), 1):
        assert kinds(stored) == kinds(now), f"code cell {number}: outputs differ; {REFRESH}"
        for output_stored, output_now in zip(stored["outputs"], now["outputs"]):
            assert shown_text(output_stored) == shown_text(output_now), f"code cell {number} is stale; {REFRESH}"


def test_the_rerun_computes_what_the_text_says(rerun):
    _, state = rerun
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
        assert (out / name).read_bytes().startswith(PNG_SIGNATURE), name
    events = json.loads((out / "amp_timeline.json").read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)


def test_notebook_takes_the_trace_from_the_environment(monkeypatch, tmp_path):
    linked = tmp_path / "my_trace.json.gz"
    linked.symlink_to(EXAMPLE_TRACE)
    monkeypatch.setenv("DAYDREAM_EXAMPLE_TRACE", str(linked))
    namespace = {"__name__": "__main__"}
    try:
        run_cell("".join(code_cells(stored_notebook())[0]["source"]), namespace, "code cell 1")
        assert namespace["graph"].source_path == str(linked)
    finally:
        shutil.rmtree(namespace.get("OUT", tmp_path / "none"), ignore_errors=True)
