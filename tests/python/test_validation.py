"""Predictions checked against measured before/after pairs (docs/validation.md): for every pair of
benchmarks/validation/bounds.json with a bound, predict AFTER from BEFORE and fail when the error
of the mean iteration time exceeds the bound. Pairs without a bound are skipped with their reason;
everything is skipped when the shared folder (../shared) is absent.

Slow (the pairs are Nsight Systems profiles of 30 to 60 steps): ctest runs it on its own as
python_validation_pairs.
"""

import sys
from pathlib import Path

import pytest

import daydream

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "benchmarks" / "validation"))
from validate_pairs import load_pairs, resolve  # noqa: E402  (one source of truth for pairs and bounds)

PAIRS = load_pairs()


@pytest.mark.parametrize("pair", PAIRS, ids=[p["pair"] for p in PAIRS])
def test_prediction_within_bound(pair):
    if not SHARED.is_dir():
        pytest.skip(f"shared pairs absent: {SHARED} (the shared folder is not next to the checkout)")
    if not pair.get("scenario") or pair.get("bound") is None:
        pytest.skip(f"no bound for {pair['pair']}: {pair.get('reason') or 'not set'}")
    before, after = resolve(SHARED, pair["before"]), resolve(SHARED, pair["after"])
    if not before.exists() or not after.exists():
        pytest.skip(f"shared pairs absent: {before} or {after}")
    frame = daydream.validate(before, after, pair["scenario"])
    error = frame.attrs["error"]["mean"]
    assert abs(error) <= pair["bound"], (
        f"{pair['pair']} ({pair['scenario']}): error of the mean {error:+.3f} exceeds the bound "
        f"{pair['bound']}: predicted {frame.attrs['predicted']}, measured {frame.attrs['measured']}")


def test_bounds_file_is_well_formed():
    keys = {"pair", "before", "after", "scenario", "bound", "reason"}
    for pair in PAIRS:
        assert set(pair) == keys, pair
        assert pair["bound"] is None or (pair["scenario"] and 0 < pair["bound"] < 10), pair
        assert pair["bound"] is not None or pair["reason"], f"{pair['pair']}: a pair without a bound says why"
