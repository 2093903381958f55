"""Executes a Jupyter notebook without Jupyter and stores its outputs, as the notebook front end
would: what a cell prints (stream), the value of its last expression (execute_result, with HTML
for objects that have it, e.g. DataFrames) and every matplotlib figure open at its end (PNG).

    python3 tests/python/notebook_exec.py docs/scenarios.ipynb   # re-runs it and stores outputs

It runs in the notebook's folder, as Jupyter does, with matplotlib's Agg backend. The test
tests/python/test_notebook.py re-runs the notebook the same way and compares the outputs.
nbformat and nbclient are not needed: the file is nbformat 4 JSON, written with the same layout
Jupyter uses (indent 1, sorted keys), so a re-run that changes nothing leaves it byte-identical."""

from __future__ import annotations

import argparse
import ast
import base64
import contextlib
import copy
import io
import json
import os
import sys
from pathlib import Path

PNG_DPI = 72  # matplotlib-inline's resolution: small files, still sharp on the repository page


def lines(text: str) -> list[str]:
    """nbformat's multi-line string: a list of lines that keep their newline."""
    return text.splitlines(keepends=True)


def run_cell(source: str, namespace: dict, name: str) -> tuple[str, str, object]:
    """Runs one cell; returns what it wrote to stdout, to stderr, and its last expression's value
    (None when it ends with a statement). An exception propagates, named after the cell."""
    tree = ast.parse(source, filename=name)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        exec(compile(tree, name, "exec"), namespace)
        value = eval(compile(ast.Expression(last.value), name, "eval"), namespace) if last else None
    return stdout.getvalue(), stderr.getvalue(), value


def value_output(value: object, execution_count: int) -> dict:
    data = {"text/plain": lines(repr(value))}
    if hasattr(value, "_repr_html_"):
        data["text/html"] = lines(value._repr_html_())
    return {"data": data, "execution_count": execution_count, "metadata": {}, "output_type": "execute_result"}


def figure_outputs() -> list[dict]:
    """Every open figure as a PNG display, closed afterwards, as matplotlib-inline shows them."""
    if "matplotlib.pyplot" not in sys.modules:
        return []
    import matplotlib.pyplot as plt

    outputs = []
    for number in plt.get_fignums():
        figure = plt.figure(number)
        png = io.BytesIO()
        # No Software/date metadata, so the same figure gives the same bytes.
        figure.savefig(png, format="png", dpi=PNG_DPI, bbox_inches="tight", metadata={"Software": None})
        width, height = figure.get_size_inches() * figure.dpi
        outputs.append({"data": {"image/png": base64.b64encode(png.getvalue()).decode("ascii") + "\n",
                                 "text/plain": [f"<Figure size {width:g}x{height:g} with {len(figure.axes)} Axes>"]},
                        "metadata": {}, "output_type": "display_data"})
    plt.close("all")
    return outputs


def execute(notebook: dict, folder: Path) -> tuple[dict, dict]:
    """Runs every code cell of `notebook` in order in one namespace, in `folder`; returns a copy of
    the notebook with outputs and execution counts, and the final namespace."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    executed = copy.deepcopy(notebook)
    namespace = {"__name__": "__main__"}
    count = 0
    previous = Path.cwd()
    os.chdir(folder)
    try:
        for cell in executed["cells"]:
            if cell["cell_type"] != "code":
                continue
            count += 1
            stdout, stderr, value = run_cell("".join(cell["source"]), namespace, f"code cell {count}")
            outputs = [{"name": name, "output_type": "stream", "text": lines(text)}
                       for name, text in (("stdout", stdout), ("stderr", stderr)) if text]
            if value is not None:
                outputs.append(value_output(value, count))
            cell["outputs"] = outputs + figure_outputs()
            cell["execution_count"] = count
    finally:
        os.chdir(previous)
    return executed, namespace


def dumps(notebook: dict) -> str:
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    arguments = parser.parse_args()
    path = arguments.notebook.resolve()
    executed, _ = execute(json.loads(path.read_text()), path.parent)
    path.write_text(dumps(executed))
    print(f"{path}: {sum(c['cell_type'] == 'code' for c in executed['cells'])} code cells run, outputs stored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
