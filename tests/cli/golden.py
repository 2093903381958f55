#!/usr/bin/env python3
"""Golden-file test of one daydream CLI command (Perfetto's diff tests, SimGrid's .tesh files).

    golden.py GOLDEN --source-dir DIR --build-dir DIR --version X.Y.Z -- DAYDREAM [ARGS...]

Runs DAYDREAM ARGS, records its exit status, stdout and stderr, normalises them (normalise())
and compares the result with the file GOLDEN byte for byte; a mismatch fails with a unified diff.
With DAYDREAM_UPDATE_GOLDEN=1 in the environment it rewrites GOLDEN instead (review the change
with `git diff tests/golden`). Python's standard library only: the tests need no package.
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys

UPDATE_VARIABLE = "DAYDREAM_UPDATE_GOLDEN"
NO_NEWLINE = "# (no newline at end)\n"

# Sweep progress lines ("sweep: 542/901 predictions (60%), 2.0 s"): whether any is printed, and
# how many, depends on the wall clock (docs/cli.md, "Progress"), so they are dropped.
PROGRESS_LINE = re.compile(r"^sweep: \d+/\d+ predictions \(\d+%\), [0-9.]+ s\n", re.MULTILINE)

def parse_args(argv):
    """The runner's options, then `--`, then the command, untouched (its options are not ours)."""
    if "--" not in argv:
        sys.exit("golden.py: usage: GOLDEN --source-dir DIR --build-dir DIR --version X.Y.Z -- DAYDREAM [ARGS...]")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("golden", help="the golden file (tests/golden/NAME.out)")
    parser.add_argument("--source-dir", required=True, help="project source directory, written <SRC>")
    parser.add_argument("--build-dir", required=True, help="build directory, written <BUILD>")
    parser.add_argument("--version", required=True, help="the project version, written <VERSION>")
    args = parser.parse_args(argv[:split])
    args.command = argv[split + 1:]
    if not args.command:
        parser.error("no command after --")
    return args


def path_placeholders(source_dir, build_dir):
    """(absolute path, placeholder), longest path first: the build directory usually lies inside
    the source directory, and ../shared beside it, so the longer prefix must be replaced first.
    Each directory is listed as given (`<SRC>/../shared`, as the tests spell it), normalised and
    resolved, so that symlinked checkouts match too."""
    shared_dir = os.path.join(source_dir, "..", "shared")
    pairs = {}
    for path, placeholder in ((build_dir, "<BUILD>"), (source_dir, "<SRC>"), (shared_dir, "<SHARED>")):
        for variant in (path, os.path.abspath(path), os.path.realpath(path)):
            if os.path.isabs(variant):
                pairs.setdefault(variant, placeholder)
    return sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True)


def normalise(text, placeholders, version):
    """What legitimately differs between machines and checkouts becomes a placeholder: absolute
    paths of the checkout (<SRC>, <BUILD>, <SHARED>) and the version string (<VERSION>); sweep
    progress lines are dropped. Model
    numbers (times, counts, ratios) are deterministic and kept exactly."""
    for path, placeholder in placeholders:
        # Whole path components only: /work/src must not match inside /work/src2.
        text = re.sub(re.escape(path) + r"(?![\w.-])", placeholder, text)
    text = re.sub(r"(?<![\w.])" + re.escape(version) + r"(?![\w.])", "<VERSION>", text)
    return PROGRESS_LINE.sub("", text)


def section(title, text):
    """A titled block; output without a final newline (JSON) gets a marker, so that adding or
    dropping that newline shows as a difference."""
    if text and not text.endswith("\n"):
        text += "\n" + NO_NEWLINE
    return f"# {title}\n{text}"


def render(args, status, stdout, stderr):
    placeholders = path_placeholders(args.source_dir, args.build_dir)
    command = " ".join(["daydream"] + [quote(a) for a in args.command[1:]])
    blocks = [f"# $ {command}\n", f"# exit {status}\n", section("stdout", stdout), section("stderr", stderr)]
    return normalise("".join(blocks), placeholders, args.version)


def quote(arg):
    """Shell quoting, only where needed, so that the first line reads as the shell command."""
    return arg if re.fullmatch(r"[\w@%+=:,./-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def run(command):
    # Bytes, decoded with surrogateescape: bytes that are not UTF-8 survive the round trip exactly.
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    return (result.returncode, result.stdout.decode("utf-8", "surrogateescape"),
            result.stderr.decode("utf-8", "surrogateescape"))


def read_golden(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        return f.read()


def write_golden(path, text):
    with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
        f.write(text)


def compare(path, expected, actual):
    """0 when equal; otherwise prints the unified diff (golden -> actual) and returns 1."""
    if expected == actual:
        return 0
    if expected is None:
        print(f"{path}: no golden file; create it with {UPDATE_VARIABLE}=1 (docs/cli.md, \"Golden files\")")
        print(actual, end="")
        return 1
    diff = difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                fromfile=path, tofile="actual output")
    sys.stdout.writelines(line if line.endswith("\n") else line + "\n" for line in diff)
    print(f"output differs from {path}; if the change is intended, rerun with {UPDATE_VARIABLE}=1 and review "
          "`git diff tests/golden`")
    return 1


def json_problem(command, status, stdout):
    """Successful `--json` output must be one JSON object (docs/cli.md): checked apart from the
    comparison, so that update mode cannot record a broken one."""
    if "--json" not in command or status != 0:
        return None
    try:
        parsed = json.loads(stdout)
    except ValueError as e:
        return f"stdout is not JSON: {e}"
    return None if isinstance(parsed, dict) else "stdout is JSON but not one object"


def main(argv):
    args = parse_args(argv)
    status, stdout, stderr = run(args.command)
    problem = json_problem(args.command, status, stdout)
    if problem:
        print(f"{args.golden}: {problem}\n{stdout}")
        return 1
    actual = render(args, status, stdout, stderr)
    if os.environ.get(UPDATE_VARIABLE) == "1":
        if read_golden(args.golden) != actual:
            write_golden(args.golden, actual)
            print(f"updated {args.golden}")
        return 0
    return compare(args.golden, read_golden(args.golden), actual)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
