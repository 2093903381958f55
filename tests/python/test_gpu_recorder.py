"""benchmarks/gpu: the recorder a GPU session runs (record.py), the pairs it makes (pairs.json) and
their validation (validate_recorded.py).

The first test needs no torch: every trace pairs.json names must be a run record.py defines, and
each pair's "before" must be recorded before its "after" (a budget cut keeps the befores). The
others run record.py --quick on the CPU and read its traces with daydream; they need an
interpreter with torch: DAYDREAM_TORCH_PYTHON, else this one, else they skip.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import daydream

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "benchmarks" / "gpu"


def defined_runs() -> list[str]:
    """'workload/variant' of record.py's runs, in order, read from its source (no torch here)."""
    text = (GPU / "record.py").read_text()
    return [f"{w}/{v}" for w, v in re.findall(r'\bRun\("([a-z0-9_]+)", "([a-z0-9_]+)"', text)]


def test_pairs_name_runs_the_recorder_defines_befores_first():
    runs = defined_runs()
    assert len(runs) == len(set(runs)) >= 10
    pairs = json.loads((GPU / "pairs.json").read_text())["pairs"]
    assert pairs
    for pair in pairs:
        before, after = (pair[k].removesuffix(".json.gz") for k in ("before", "after"))
        assert before in runs and after in runs, pair["pair"]
        assert runs.index(before) < runs.index(after), pair["pair"]
        assert pair["scenario"], pair["pair"]


def torch_python() -> str | None:
    for candidate in (os.environ.get("DAYDREAM_TORCH_PYTHON"), sys.executable):
        if candidate and subprocess.run([candidate, "-c", "import torch"], capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    python = torch_python()
    if python is None:
        pytest.skip("torch not installed (set DAYDREAM_TORCH_PYTHON to an interpreter that has it)")
    out = tmp_path_factory.mktemp("recorded")
    result = subprocess.run([python, str(GPU / "record.py"), "--out", str(out), "--quick", "--device", "cpu",
                             "--only", "vit_b16", "resnet50_loader/workers0"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return out / "cpu-quick"


def test_recorder_writes_a_manifest_and_one_trace_per_run(recorded):
    manifest = json.loads((recorded / "manifest.json").read_text())
    assert manifest["device"]["name"] == "cpu" and manifest["device"]["quick"] is True
    runs = {f'{r["workload"]}/{r["variant"]}': r for r in manifest["runs"]}
    assert sorted(runs) == ["resnet50_loader/workers0", "vit_b16/amp_bf16", "vit_b16/amp_fp16", "vit_b16/fp32",
                            "vit_b16/fused_adamw"]
    for name, run in runs.items():
        assert "error" not in run, run
        assert run["measured_mean_ms"] > 0 and run["profiled_steps"] == manifest["steps"]["profiled"] == 4
        trace = recorded / run["trace"]
        assert trace.name == name.split("/")[1] + ".json.gz" and trace.stat().st_size == run["trace_bytes"]


def test_daydream_reads_each_recorded_step(recorded):
    graph = daydream.load(str(recorded / "vit_b16" / "fp32.json.gz"))
    result = graph.simulate()
    assert len(result.iteration_names) == 4
    assert all(name.startswith("ProfilerStep#") for name in result.iteration_names)
    # replay of an unmodified graph gives each measured step
    assert result.iteration_times_ns == result.measured_iteration_times_ns


def test_validate_recorded_tables_the_pairs_whose_traces_exist(recorded):
    script = [sys.executable, str(GPU / "validate_recorded.py"), "--recorded", str(recorded.parent),
              "--daydream", os.environ.get("DAYDREAM_CLI", str(REPO / "build" / "bin" / "daydream"))]
    plain = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "no recordings" in plain.stdout  # --quick recordings left out by default
    out = subprocess.run(script + ["--quick", "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    rows = report["Pairs on cpu-quick"]
    assert [r["pair"] for r in rows] == ["cpu-quick: vit_b16 fp32 -> amp_bf16", "cpu-quick: vit_b16 fp32 -> amp_fp16",
                                         "cpu-quick: vit_b16 fp32 -> fused_adamw"]
    assert rows[0]["result"]["compared"] == 4  # a CPU run: amp changes no kernel, but the pair is compared
    assert "nothing to fuse" in rows[2]["error"]  # the CPU optimizer launches no kernel
    assert report["Across GPUs"] == []


def test_collector_run_times_both_runs(tmp_path):
    python = torch_python()
    if python is None:
        pytest.skip("torch not installed (set DAYDREAM_TORCH_PYTHON to an interpreter that has it)")
    library = REPO / "build" / "lib" / "libdaydream_cupti.so"  # inert without CUDA: only the script is checked
    result = subprocess.run([python, str(GPU / "collector_run.py"), "--out", str(tmp_path), "--library", str(library),
                             "--quick", "--device", "cpu"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    plain, injected = json.loads((tmp_path / "collector_runs.json").read_text())
    assert (plain["injected"], injected["injected"]) == (False, True)
    assert plain["cupti_from"] is None and plain["mean_step_ms"] > 0 and injected["mean_step_ms"] > 0
    assert injected["overhead"] == pytest.approx(injected["mean_step_ms"] / plain["mean_step_ms"] - 1, abs=1e-4)
    assert "trace" not in injected  # no CUDA, so the collector never loaded and wrote nothing
