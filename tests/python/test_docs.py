"""The docs stay true to the tree. docs/architecture.md: its table of where each edge type is built names
every edge type once, and each file it names really builds that type; its library table names
every stage library that lib/CMakeLists.txt defines, and every public header exists."""

import json
import re
import subprocess
from pathlib import Path

import pytest

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



# --- every doc: paths, links, the Python names it documents ---

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
# `lib/...`, `scenarios/...`: a path of this repository, as a doc names it in backticks.
REPO_PATH = re.compile(r"`((?:lib|include|scenarios|tests|bindings|benchmarks|docs|cmake|\.ci)/[^`\s]*)`")


def without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def without_code(text: str) -> str:
    """The text without code blocks and inline code, where `](` is not a link."""
    return re.sub(r"`[^`\n]*`", "", without_code_blocks(text))


def anchors(doc: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", without_code_blocks(doc.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_docs_name_repository_paths_that_exist():
    """A renamed or removed file shows up here, not on a reader's screen. docs/install.md's paths
    are under the install prefix (tests/package/check_install.cmake checks them); a path with a
    placeholder (`<name>`, `NAME`, `{a,b}`) names no one file."""
    stale = []
    for doc in DOCS:
        if doc.name == "install.md":
            continue
        for path in REPO_PATH.findall(doc.read_text()):
            path = path.rstrip(".,:;")
            if re.search(r"[<{]|\b[A-Z]{3,}\b", path):
                continue
            if not list(REPO.glob(path)) and not (REPO / path).exists():
                stale.append(f"{doc.relative_to(REPO)}: {path}")
    assert not stale, stale


def test_relative_links_resolve():
    broken = []
    for doc in DOCS:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", without_code(doc.read_text())):
            if target.startswith(("http:", "https:", "mailto:")):
                continue
            linked = (doc.parent / target).resolve() if target else doc
            if not linked.exists():
                broken.append(f"{doc.relative_to(REPO)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{doc.relative_to(REPO)}: {target}#{anchor}")
    assert not broken, broken


def test_python_docs_list_the_filters_and_phases_the_module_has(example_trace):
    """python.md's table of select() filters is the list select() accepts, and the phases it
    quotes are daydream.PHASES."""
    text = (REPO / "docs" / "python.md").read_text()
    table = text.split("**Filters of `select`**", 1)[1].split("\n\n", 2)[1]
    documented = [name for cell in re.findall(r"^\| ([^|]+) \|", table, re.M)[1:] for name in re.findall(r"`(\w+)`", cell)]
    graph = daydream.load(example_trace)
    try:
        graph.select(no_such_filter=1)
    except TypeError as error:
        accepted = re.search(r"\(filters: ([\w, ]+)\)", str(error)).group(1).split(", ")
    assert documented == accepted
    phases = re.search(r"^\| `phase` \| (.+) \(`daydream.PHASES`\) \|$", table, re.M).group(1)
    assert tuple(re.findall(r'"(\w+)"', phases)) == daydream.PHASES


def readme_block(after_heading: str, language: str = "") -> str:
    readme = (REPO / "README.md").read_text()
    return readme.split(f"## {after_heading}\n", 1)[1].split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    command = readme.split("**Build and pass all tests**", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0].strip()
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert command in ci_lines, "README's test command and .ci/run differ"


def synopses():
    yield pytest.param(readme_block("Command line"), id="README.md")
    cli_doc = (REPO / "docs" / "cli.md").read_text()
    yield pytest.param(cli_doc.split("```\n", 1)[1].split("```", 1)[0], id="docs/cli.md")


@pytest.mark.parametrize("synopsis", list(synopses()))
def test_synopsis_is_the_cli(synopsis, cli):
    """The command synopses (README's, docs/cli.md's) name every command `daydream --help` lists,
    and every option they show is one that command's --help has."""
    def run(*args):
        return subprocess.run([cli, *args], check=True, capture_output=True, text=True).stdout

    commands = re.findall(r"^  (\w+)\s{2,}", run("--help").split("Subcommands:", 1)[1], re.M)
    entries = re.split(r"^(?=daydream )", synopsis, flags=re.M)[1:]
    assert sorted({entry.split()[1] for entry in entries}) == sorted(commands)
    for entry in entries:
        command = entry.split()[1]
        usage = re.sub(r"\s{2,}[a-z].*$", "", entry, flags=re.M)  # the usage, without the description
        options = set(re.findall(r"--[a-z-]+", run(command, "--help")))
        assert set(re.findall(r"--[a-z-]+", usage)) <= options, (command, usage)


def test_readme_replay_json_example_has_the_fields_replay_prints(cli, example_trace):
    """The example elides values with `...`; its keys, in order, are the ones replay --json prints."""
    example = readme_block("Command line", "json").replace("{...}", "{}").replace("[...]", "[]").replace("...", "null")
    shown = json.loads(example)
    printed = json.loads(subprocess.run([cli, "replay", str(example_trace), "--json"], check=True,
                                        capture_output=True, text=True).stdout)
    assert list(shown) == list(printed)
    assert list(shown["iterations"][0]) == list(printed["iterations"][0])
    assert list(shown["span"]) == list(printed["span"])


def test_every_scenario_has_its_page_linked_from_the_scenario_docs():
    """docs/scenarios/NAME.md for each scenario of the library (and no page for one it lacks),
    each linked from docs/scenarios.md."""
    names = sorted(s["name"] for s in daydream.scenarios())
    pages = sorted(page.stem for page in (REPO / "docs" / "scenarios").glob("*.md"))
    assert pages == names
    index = (REPO / "docs" / "scenarios.md").read_text()
    assert [name for name in names if f"(scenarios/{name}.md)" not in index] == []


def test_amp_docs_quote_the_ddp_resnet_predictions_as_they_are(cli):
    """docs/scenarios/amp.md's table of ddp-resnet-v100-rank0 (baseline, amp, amp:grad_scaler=0,
    amp:tensor_core=3 per step, and the medians) is what `daydream predict --json` gives now."""
    trace_dir = REPO.parent / "shared" / "traces" / "ddp-resnet-v100-rank0"
    traces = sorted(trace_dir.glob("*.json.gz"))
    if not traces:
        pytest.skip(f"shared trace absent: {trace_dir} (the shared traces folder is not next to the checkout)")
    columns = []
    for spec in ("amp", "amp:grad_scaler=0", "amp:tensor_core=3"):
        out = subprocess.run([cli, "predict", str(traces[0]), "--scenario", spec, "--json"], check=True,
                             capture_output=True, text=True).stdout
        columns.append(json.loads(out))
    rows = [f"| {it['name']} | {it['baseline_ms']:.3f} ms | "
            + " | ".join(f"{c['iterations'][i]['predicted_ms']:.3f} ms" for c in columns) + " |"
            for i, it in enumerate(columns[0]["iterations"])]
    medians = [c["median"]["predicted_ms"] for c in columns]
    base = columns[0]["median"]["baseline_ms"]
    speedups = [f"{m:.3f} ms ({base / m:.2f}x)" for m in medians]
    rows.append(f"| **median** | {base:.3f} ms | **{speedups[0]}** | {speedups[1]} | {speedups[2]} |")
    doc = (REPO / "docs" / "scenarios" / "amp.md").read_text().splitlines()
    assert [row for row in rows if row not in doc] == []
