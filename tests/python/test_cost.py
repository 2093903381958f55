"""Cost in Python (docs/gpu_model.md, "Cost"): daydream.prices, daydream.run_cost, and
daydream.sweep(price=...) giving the columns and numbers `daydream sweep --price --csv` prints."""

import concurrent.futures
import csv
import io
import json
import math
import subprocess

import pandas as pd
import pytest

import daydream

SPECS = ["gpu:target=H100|L4,from=A100-SXM4-40GB", "amp", "faster_network:bandwidth=10Gbps"]


@pytest.fixture(scope="module")
def example(example_trace):
    return daydream.load(example_trace)


def test_prices_carry_a_source_with_its_date_and_a_file_goes_over_them(tmp_path):
    builtin = {p["gpu"]: p for p in daydream.prices()}
    assert builtin["H100-SXM5-80GB"]["usd_per_gpu_hour"] == 4.29
    assert all("read 2026-" in p["source"] for p in builtin.values())
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"source": "mine", "prices": [{"gpu": "h100", "usd_per_gpu_hour": 2.0}]}))
    mine = {p["gpu"]: p for p in daydream.prices(str(path))}
    assert mine["H100-SXM5-80GB"] == {"gpu": "H100-SXM5-80GB", "usd_per_gpu_hour": 2.0, "source": "mine"}
    assert mine["A10"] == builtin["A10"]
    path.write_text(json.dumps({"prices": [{"gpu": "H100", "usd_per_gpu_hour": 0}]}))
    with pytest.raises(daydream.Error, match="usd_per_gpu_hour"):
        daydream.prices(str(path))


def test_run_cost_is_iteration_time_x_1000_x_gpus_x_price():
    cost = daydream.run_cost(250, "NVIDIA H100 80GB HBM3", gpus=8, batch_size=32)
    assert cost["gpu"] == "H100-SXM5-80GB"
    assert cost["iterations_per_s"] == 4.0 and cost["samples_per_s"] == 1024.0
    assert cost["usd_per_1k_iterations"] == pytest.approx(0.25 * 1000 * 8 * 4.29 / 3600)
    unpriced = daydream.run_cost(100, "L4")
    assert unpriced["usd_per_gpu_hour"] is None and unpriced["usd_per_1k_iterations"] is None
    assert unpriced["samples_per_s"] is None
    with pytest.raises(ValueError, match="iteration_ms"):
        daydream.run_cost(float("nan"), "L4")
    with pytest.raises(daydream.Error, match="at least 1 GPU"):
        daydream.run_cost(1, "L4", gpus=0)


def test_sweep_price_columns_match_the_cli(example, example_trace, cli):
    frame = daydream.sweep(example, SPECS, price="builtin", batch_size=32, device="A100-SXM4-40GB")
    assert list(frame.columns)[:14] == list(daydream._sweep.COLUMNS + daydream._sweep.COST_COLUMNS)
    assert frame["gpu"].tolist() == ["H100-SXM5-80GB", "L4", "A100-SXM4-40GB", None]  # the failed row: none
    assert frame["usd_per_gpu_hour"].tolist()[:1] == [4.29] and math.isnan(frame["usd_per_gpu_hour"][1])
    assert frame.attrs["baseline_cost"]["gpu"] == "A100-SXM4-40GB"
    assert frame.attrs["batch_size"] == 32
    printed = subprocess.run([cli, "sweep", "--csv", "--quiet", "--price", "builtin", "--batch-size", "32",
                          "--device", "A100-SXM4-40GB", *[a for s in SPECS for a in ("--scenario", s)],
                          str(example_trace)], capture_output=True, text=True)
    rows = list(csv.DictReader(io.StringIO(printed.stdout)))
    assert [r["scenario"] for r in rows] == frame["scenario"].tolist()
    for row, (_, expected) in zip(rows, frame.iterrows()):
        assert row["gpu"] == (expected["gpu"] or "")
        for column in ("iterations_per_s", "samples_per_s", "usd_per_gpu_hour", "usd_per_1k_iterations"):
            if math.isnan(expected[column]):
                assert row[column] == ""
            else:
                assert float(row[column]) == pytest.approx(expected[column], abs=1e-6)


def test_sweep_price_keeps_a_gpus_parameter_apart_and_works_on_executors(example):
    frame = daydream.sweep(example, ["faster_gpu:factor=2", "amp"], price="builtin")
    assert "gpus" in frame.columns and frame["gpus"].tolist() == [1, 1]
    with_parameter = daydream.sweep(example, ["ddp:gpus=4"], price="builtin")
    assert {"gpus", "param_gpus"} <= set(with_parameter.columns)  # ddp's gpus= moves aside
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        pd.testing.assert_frame_equal(daydream.sweep(example, ["faster_gpu:factor=2", "amp"], price="builtin",
                                                     executor=pool), frame)
    with pytest.raises(ValueError, match="price="):
        daydream.sweep(example, ["amp"], batch_size=8)
    with pytest.raises(daydream.Error, match="unknown GPU 'Z9000'"):
        daydream.sweep(example, ["amp"], price="builtin", device="Z9000")
