"""The docs stay true to the tree. docs/architecture.md: its table of where each edge type is built names
every edge type once, and each file it names really builds that type; its library table names
every stage library that lib/CMakeLists.txt defines, and every public header exists."""

import re
from pathlib import Path

import daydream

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "architecture.md").read_text()


def section(title: str) -> str:
    return DOC.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_edge_type_is_built_where_the_table_says():
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|", section("Where each edge type is built"), re.M)
    assert sorted(t for t, _ in rows) == sorted(daydream.EDGE_TYPES)
    for edge_type, files in rows:
        for path in re.findall(r"`(lib/[\w/]+\.cpp)`", files):
            assert f"EdgeType::{edge_type}" in (REPO / path).read_text(), f"{path} builds no {edge_type} edge"


def test_library_table_matches_the_build():
    stages = re.findall(r"daydream_add_stage\((\w+)", (REPO / "lib" / "CMakeLists.txt").read_text())
    stages += re.findall(r"daydream_add_stage\((\w+)", (REPO / "scenarios" / "CMakeLists.txt").read_text())
    table = section("Libraries and layers")
    assert re.findall(r"^\| `daydream::(\w+)` \|", table, re.M) == stages + ["daydream"]
    for header in re.findall(r"`((?:report/)?\w+\.hpp)`", table):
        if "*" not in header:
            assert (REPO / "include" / "daydream" / header).exists(), header


def test_cli_docs_quote_the_cli_as_it_answers():
    """docs/cli.md's error example is the line the golden file of the same command holds."""
    golden = (REPO / "tests" / "golden" / "predict_unknown_scenario.out").read_text()
    line = next(l for l in golden.splitlines() if l.startswith("error: unknown scenario"))
    assert line in (REPO / "docs" / "cli.md").read_text().splitlines()


def test_gpu_model_docs_quote_the_catalogue_as_daydream_gpus_prints_it():
    """docs/gpu_model.md's table is the stdout of the golden file of `daydream gpus`."""
    golden = (REPO / "tests" / "golden" / "gpus.out").read_text()
    table = golden.split("# stdout\n", 1)[1].split("\n\nthroughputs", 1)[0]
    doc = (REPO / "docs" / "gpu_model.md").read_text()
    quoted = doc.split("<!-- gpus table: tests/golden/gpus.out -->\n```\n", 1)[1].split("```", 1)[0]
    assert quoted.rstrip("\n") == table.rstrip("\n")


def test_cli_docs_quote_the_roofline_as_it_prints():
    """docs/cli.md's roofline example is lines of the golden file of the same command ("..." skips)."""
    golden = (REPO / "tests" / "golden" / "roofline_shapes.out").read_text().replace("<SRC>/", "").splitlines()
    doc = (REPO / "docs" / "cli.md").read_text()
    quoted = doc.split("$ daydream roofline tests/data/roofline/shapes.json\n", 1)[1].split("```", 1)[0]
    for line in quoted.splitlines():
        assert line == "..." or line in golden, line


def golden_stdout(name: str) -> str:
    """The stdout a golden file holds, with paths as the docs write them."""
    golden = (REPO / "tests" / "golden" / f"{name}.out").read_text().replace("<SRC>/", "")
    return golden.split("# stdout\n", 1)[1].split("# stderr", 1)[0]


def cli_docs_block_after(command_line: str) -> str:
    """The text docs/cli.md shows after `command_line`, up to the end of its code block."""
    return (REPO / "docs" / "cli.md").read_text().split(command_line + "\n", 1)[1].split("```", 1)[0]


def test_cli_docs_quote_the_sweep_cost_table_as_it_prints():
    """docs/cli.md's `sweep --price` example is the stdout of the golden file of the same command."""
    assert cli_docs_block_after("--price builtin --batch-size 32 --device A100-SXM4-40GB") == golden_stdout("sweep_price")


def test_cli_docs_quote_the_bottleneck_report_as_it_prints():
    """docs/cli.md's `bottleneck` example is the stdout of the golden file of the same command."""
    assert cli_docs_block_after("$ daydream bottleneck tests/data/example/synthetic_training.json.gz") == \
        golden_stdout("bottleneck_example")


def test_gpu_model_docs_list_the_builtin_prices_as_the_library_holds_them():
    """docs/gpu_model.md's price table is daydream.prices(), row for row."""
    doc = (REPO / "docs" / "gpu_model.md").read_text()
    table = doc.split("<!-- prices table: daydream.prices() -->\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    expected = [f"| {p['gpu']} | {p['usd_per_gpu_hour']:.2f} | {p['source']} |" for p in daydream.prices()]
    assert table == expected

