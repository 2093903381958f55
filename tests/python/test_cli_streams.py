"""CLI conventions (issue 17 item 7): results alone on stdout, so `--json > file` is always JSON;
progress, notes, warnings and errors on stderr."""

import json
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE_DIR = REPO / "tests" / "data" / "example"
EXAMPLE = EXAMPLE_DIR / "synthetic_training.json.gz"


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True)


# Each --json command, on a folder that holds a layer file beside the trace (skipped with a
# warning) where the command reads folders.
JSON_COMMANDS = [
    ("replay", EXAMPLE_DIR),
    ("bottleneck", EXAMPLE_DIR),
    ("predict", EXAMPLE_DIR, "--scenario", "amp"),
    ("sweep", EXAMPLE_DIR, "--scenario", "faster_gpu:factor=2|4"),
    ("validate", EXAMPLE, EXAMPLE, "--scenario", "faster_gpu:factor=1"),
    ("stats", EXAMPLE),
    ("layers", EXAMPLE),
    ("gpus",),
    ("scenarios",),
]


@pytest.mark.parametrize("command", JSON_COMMANDS, ids=lambda c: c[0])
def test_json_on_stdout_is_json_and_notes_go_to_stderr(cli, command):
    done = run(cli, *command, "--json")
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)  # nothing else on stdout: no warning, no progress
    if command[0] in ("replay", "bottleneck", "predict", "sweep"):
        assert "synthetic_layers.json" in done.stderr  # the skipped layer file, said on stderr


def test_errors_go_to_stderr_with_nothing_on_stdout(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "k", "ts": "soon"}]}')
    for args in (("replay", bad, "--json"), ("predict", EXAMPLE, "--scenario", "nope", "--json"), ("rplay", EXAMPLE)):
        done = run(cli, *args)
        assert done.returncode != 0
        assert done.stdout == ""
        assert done.stderr.startswith("error: ")
    assert "replay" in run(cli, "rplay", EXAMPLE).stderr  # the suggestion


def python_m_daydream(*args):
    """`python -m daydream ARGS` as a user runs it (the package the tests import)."""
    import sys

    return subprocess.run([sys.executable, "-m", "daydream", *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("args", [("predict", EXAMPLE, "--scenario", "amp", "--json"),
                                  ("sweep", EXAMPLE, "--scenario", "faster_gpu:factor=2|4", "--csv"),
                                  ("scenarios",), ("--version",)],
                         ids=lambda a: a[0])
def test_python_m_daydream_is_the_cli(cli, args):
    """Issue 17 item 3: `python -m daydream` answers as the `daydream` program, byte for byte."""
    module, program = python_m_daydream(*args), run(cli, *args)
    assert (module.returncode, module.stdout, module.stderr) == (program.returncode, program.stdout, program.stderr)
    assert module.returncode == 0 and module.stdout


def test_python_m_daydream_errors_and_usage():
    done = python_m_daydream("rplay", EXAMPLE)
    assert (done.returncode, done.stdout) == (1, "")
    assert "did you mean 'replay'?" in done.stderr
    done = python_m_daydream("replay", "/nonexistent/trace.json")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("error: /nonexistent/trace.json")
    assert python_m_daydream().returncode != 0  # no command: usage on stderr


def test_python_m_daydream_runs_twice_in_one_process():
    """The CLI's logger is not registered by name, so a second run in the same process works."""
    from daydream.__main__ import main

    assert main(["scenarios", "--json"]) == 0
    assert main(["replay", "/nonexistent/trace.json"]) == 1
    assert main(["scenarios", "--json"]) == 0


# --- paths that cannot be read are bad input (exit 1, the path and the reason), never exit 2 ---

@pytest.fixture
def unreadable_paths(tmp_path):
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop.name)
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.json.gz").symlink_to(EXAMPLE)
    (job / "rank1.json").symlink_to("nowhere.json")  # dangling, named like a trace
    (job / "notes.txt").symlink_to("nowhere.txt")  # dangling, not a trace: ignored
    return {"loop": loop, "job": job}


@pytest.mark.parametrize("command", [("replay",), ("stats",), ("layers",), ("bottleneck",), ("roofline",),
                                     ("predict", "--scenario", "amp"), ("sweep", "--scenario", "amp"),
                                     ("gpus",)], ids=lambda c: c[0])
def test_a_symlink_loop_is_bad_input(cli, unreadable_paths, command):
    loop = unreadable_paths["loop"]
    done = run(cli, command[0], loop, *command[1:])
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith(f"error: {loop}: ") and "symbolic links" in done.stderr.lower(), done.stderr


def test_validate_names_the_run_it_cannot_read(cli, unreadable_paths):
    done = run(cli, "validate", EXAMPLE, unreadable_paths["loop"], "--scenario", "amp")
    assert done.returncode == 1 and f"error: {unreadable_paths['loop']}: " in done.stderr, done.stderr


def test_a_job_folder_with_a_dangling_trace_names_it(cli, unreadable_paths):
    done = run(cli, "replay", unreadable_paths["job"])
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: {unreadable_paths['job'] / 'rank1.json'}: "), done.stderr
    (unreadable_paths["job"] / "rank1.json").unlink()
    assert run(cli, "replay", unreadable_paths["job"]).returncode == 0  # notes.txt is no trace: ignored


def _under_memory_limit(limit_bytes):
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    return limit


@pytest.mark.parametrize("case", ["trailer_claims_4_gib", "truncated_prefix", "bomb_of_spaces"])
def test_gzip_is_inflated_as_far_as_it_really_goes(cli, tmp_path, case):
    """Issue 18 item 3: a gzip trailer is no promise. A 39-byte file claiming 4 GiB reserved and
    zero-filled 4 GiB; a 1 KB prefix of a real trace cost 3.2 GB; both now fail in a few MB."""
    import gzip
    import struct
    path = tmp_path / f"{case}.json.gz"
    if case == "trailer_claims_4_gib":
        data = bytearray(gzip.compress(b"{}"))
        data[-4:] = struct.pack("<I", 0xFFFFFFFF)
        path.write_bytes(bytes(data))
    elif case == "truncated_prefix":
        path.write_bytes(EXAMPLE.read_bytes()[:1024])
    else:
        path.write_bytes(gzip.compress(b" " * 100_000_000))  # 100 KB that inflate to 100 MB
    done = subprocess.run([cli, "replay", path], capture_output=True, text=True, timeout=60,
                          preexec_fn=_under_memory_limit(1 << 30))
    assert done.returncode == 1, done.stderr
    expected = "unrecognised trace format" if case == "bomb_of_spaces" else "corrupt or truncated gzip stream"
    assert done.stderr.startswith(f"error: {path}: ") and expected in done.stderr, done.stderr
