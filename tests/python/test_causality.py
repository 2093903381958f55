"""Replay and causality on every shared trace (docs/validation.md, "Replay and causality"):
each trace imports without an internal error, replays its iterations within bounds, and
`faster_gpu:factor=2` respects Amdahl's bound (and reaches 1.7x where the run is GPU-bound) and
ends no step later than the baseline.
Skipped with a visible reason when ../shared is absent."""
import importlib.util
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"

# Iteration replay bounds (max |error| per iteration, median |error|): 2% / 1% everywhere. A
# trace that misses them for a reason docs/validation.md explains gets its own bound here (none
# since the GPU occupancy model: the DALI runs' device-to-device copies and the side-stream
# pattern replay within 0.5%).
DEFAULT_BOUND = (0.02, 0.01)
KNOWN_MISSES: dict[str, tuple[float, float]] = {}
# GPU-bound runs (u >= 0.9, no CPU thread above 40% busy) must predict at least 1.7x; a trace
# that misses it for a reason docs/validation.md explains would be listed here (none since
# cross_thread prefers hand-offs: sc21/4gpu_baseline 1.67x -> 1.72x).
GPU_BOUND_MISSES: set[str] = set()


def _causality():
    path = REPO / "benchmarks" / "validation" / "causality.py"
    spec = importlib.util.spec_from_file_location("causality", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def survey():
    if not SHARED.is_dir():
        pytest.skip(f"shared traces absent: {SHARED} (the shared folder is not next to the checkout)")
    causality = _causality()
    return {str(p.relative_to(SHARED)): causality.survey(p) for p in causality.survey_files(SHARED)}


def test_every_shared_trace_replays_within_its_bound(survey):
    assert any(name.startswith("pairs/") for name in survey), "no Nsight pair was surveyed"
    for name, row in survey.items():
        if row["max_error"] is None:
            continue  # no iterations in this trace
        worst, median = KNOWN_MISSES.get(name, DEFAULT_BOUND)
        assert row["max_error"] <= worst, f"{name}: worst iteration off by {row['max_error']:.2%}"
        assert row["median_error"] <= median, f"{name}: median iteration off by {row['median_error']:.2%}"


def test_faster_gpu_respects_amdahl_and_moves_gpu_bound_runs(survey):
    checked = 0
    for name, row in survey.items():
        if not row.get("faster_gpu_2x"):
            continue
        assert row["faster_gpu_2x"] <= row["amdahl"] + 1e-6, f"{name}: {row['faster_gpu_2x']:.3f}x > Amdahl"
        # faster_gpu scales kernels only: the tighter bound over the time some kernel runs holds too
        assert row["faster_gpu_2x"] <= row["amdahl_kernels"] + 1e-6, f"{name}: above Amdahl over kernels"
        assert row["faster_gpu_2x"] >= 1.0 - 1e-6, f"{name}: a faster GPU slowed the run"
        # no step ends later (a single step may be longer where a data pipeline keeps its pace);
        # 1 us of slack for the report's rounding to ns over up to 59 steps
        assert row["step_end_lateness_ms"] <= 1e-3, f"{name}: a step ends {row['step_end_lateness_ms']:.3f} ms later"
        if row["u"] >= 0.9 and row["busiest_thread"] <= 0.4 and name not in GPU_BOUND_MISSES:
            assert row["faster_gpu_2x"] >= 1.7, f"{name}: GPU-bound but only {row['faster_gpu_2x']:.3f}x"
            checked += 1
    assert checked >= 3, "fewer GPU-bound traces than expected were checked"
