"""Docs that cannot go stale (issue 17 item 10): every code block of README.md and docs/*.md marked
runnable is run, and what it prints is compared with what the docs show.

A block is runnable when the line before its fence is `<!-- runnable -->`, or
`<!-- runnable, needs PATH -->` for one that reads data outside the repository (PATH relative to
the repository root, e.g. `../shared/traces/...`): it is skipped, with the reason, where PATH is
absent.
- a `console` or `sh` block holds commands (`$ daydream ...`, continued with a trailing `\\`),
  each followed by the output the docs show: its stdout, or its stderr when stdout is empty (an
  error). A line
  `...` stands for any number of lines. Commands run in the repository root with the CLI under test
  first on PATH.
- a `python` block runs in a fresh namespace in the repository root (with daydream importable);
  lines of the form `# -> TEXT` after a print() give the text it must print, in order.
"""

import contextlib
import io
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^<!-- runnable(?:, needs (\S+))? -->\n```(\w+)\n(.*?)^```", re.M | re.S)


def runnable_blocks():
    for doc in DOCS:
        text = doc.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            needs, language, block = match.groups()
            yield pytest.param(language, block, needs, id=f"{doc.relative_to(REPO)}:{line}")


def commands(block: str):
    """(command, expected output lines) for each `$ ` line of a console block."""
    found, command, expected = [], None, []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            if command is not None:
                found.append((command, expected))
            command, expected = line[2:], []
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
        elif command is not None:
            expected.append(line)
        i += 1
    if command is not None:
        found.append((command, expected))
    return found


def matches(expected: list, actual: list) -> bool:
    """Line by line; a `...` line matches any run of lines (none included)."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and matches(expected[1:], actual[1:])


def run_console(block: str, cli: str) -> None:
    env = dict(os.environ, PATH=f"{Path(cli).parent}{os.pathsep}{os.environ['PATH']}")
    steps = commands(block)
    assert steps, "a runnable console block without a `$ ` command"
    for command, expected in steps:
        done = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        shown = done.stdout if done.stdout.strip() else done.stderr
        actual = shown.rstrip("\n").splitlines() if shown.strip() else []
        while expected and expected[-1] == "":
            expected = expected[:-1]
        assert matches(expected, actual), (
            f"$ {command}\n(exit {done.returncode}) printed:\n{shown}\nthe docs show:\n" + "\n".join(expected))


def run_python(block: str) -> None:
    wanted = [m.group(1) for m in re.finditer(r"^\s*# -> (.*)$", block, re.M)]
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        import matplotlib

        matplotlib.use("Agg")
        with contextlib.redirect_stdout(out):
            exec(compile(block, "<docs block>", "exec"), {"__name__": "__docs__"})
    finally:
        os.chdir(cwd)
        import matplotlib.pyplot as plt

        plt.close("all")
    printed = out.getvalue().splitlines()
    position = 0
    for text in wanted:  # in order, each a printed line
        assert text in printed[position:], f"the block should print {text!r}; it printed:\n{out.getvalue()}"
        position = printed.index(text, position) + 1


def test_the_docs_mark_runnable_blocks():
    blocks = list(runnable_blocks())
    assert len(blocks) >= 10, "runnable blocks went missing from the docs"
    assert {b.values[0] for b in blocks} <= {"console", "sh", "python"}


@pytest.mark.parametrize("language, block, needs", list(runnable_blocks()))
def test_runnable_block(language, block, needs, cli):
    if needs and not (REPO / needs).exists():
        pytest.skip(f"the block reads {needs}, which is absent (the shared folder is not next to the checkout)")
    if language == "python":
        run_python(block)
    else:
        run_console(block, cli)


def test_readme_accuracy_claim_is_the_validation_table():
    """README's DataLoader accuracy sentence quotes docs/validation.md's measured error (median)."""
    readme = (REPO / "README.md").read_text()
    claimed = re.search(r"run's median step within ([0-9.]+)%", readme).group(1)
    row = next(l for l in (REPO / "docs" / "validation.md").read_text().splitlines()
               if l.startswith("| resnet50 workers0 -> workers4 |"))
    median_error = re.search(r"\| ([-+][0-9.]+)% / [-+][0-9.]+% \|", row).group(1)
    assert float(claimed) == abs(float(median_error))
