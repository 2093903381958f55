"""daydream.roofline and daydream.plot_roofline (docs/python.md, "The GPU model"): the DataFrames'
columns and values on a hand-built trace whose operators record their shapes, the name rule
without shapes, errors for unknown GPUs, the plot, and the ResNet-50 trace (skipped when absent)."""

import math

import pytest

import daydream
from kineto_builder import KinetoJson

V100 = {"id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079899648}
COLUMNS = ["name", "engine", "precision", "time_ms", "kernels", "flops", "bytes", "achieved_tflops", "achieved_gbps",
           "share_of_peak", "bound", "decided_by", "intensity", "ridge", "shaped_time_ms", "shaped_kernels",
           "expected_ms"]


def gemm_trace(tmp_path, device=V100, shapes=True):
    """A layer "fc" whose aten::mm ([1024, 1024] x [1024, 1024]) launches one 200 us sgemm, and an
    aten::add of two [4, 256] tensors launching a 10 us elementwise kernel."""
    t = KinetoJson(device=device)
    t.annotation("ProfilerStep#1", 0, 1000)
    t.annotation("fc", 5, 200)
    mm_args = {"Input Dims": [[1024, 1024], [1024, 1024]], "Input type": ["float", "float"]} if shapes else None
    t.cpu_op("aten::mm", 10, 100, args=mm_args)
    t.launch("volta_sgemm_128x64_nn", 20, 1, kernel_ts=30, kernel_dur=200)
    add_args = {"Input Dims": [[4, 256], [4, 256], []], "Input type": ["float", "float", "Scalar"]} if shapes else None
    t.cpu_op("aten::add", 300, 50, args=add_args)
    t.launch("void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>(int)", 310, 2, kernel_ts=320,
             kernel_dur=10)
    return daydream.load(str(t.write(tmp_path / "gemm.json")))


def test_frames_have_the_columns_and_the_work(tmp_path):
    pytest.importorskip("pandas")
    report = daydream.roofline(gemm_trace(tmp_path))
    for frame in (report.classes, report.operators, report.layers, report.expected):
        assert list(frame.columns) == COLUMNS
    assert report.device["name"] == "V100-SXM2-32GB"
    assert report.device["recorded"] == "Tesla V100-SXM2-32GB"
    assert report.summary["shaped_kernels"] == 2 and report.summary["expected_by"] == "layer"
    mm = report.operators.set_index("name").loc["aten::mm"]
    assert mm["flops"] == 2 * 1024 ** 3
    assert mm["bytes"] == 3 * 1024 * 1024 * 4
    assert mm["bound"] == "compute"
    assert mm["decided_by"] == "shapes: intensity 170.67 vs ridge 17.44"
    assert mm["achieved_tflops"] == pytest.approx(2 * 1024 ** 3 / 200e-6 / 1e12)
    assert mm["share_of_peak"] == pytest.approx(2 * 1024 ** 3 / 200e-6 / 15.7e12)
    add = report.operators.set_index("name").loc["aten::add"]
    assert add["bytes"] == 3 * 1024 * 4 and add["bound"] == "memory"
    assert list(report.layers["name"]) == ["fc"]
    assert report.classes["kernels"].dtype == "int64"


def test_without_shapes_the_name_rule_decides(tmp_path):
    pytest.importorskip("pandas")
    report = daydream.roofline(gemm_trace(tmp_path, shapes=False))
    assert report.summary["shaped_kernels"] == 0
    assert report.expected.empty
    classes = report.classes.set_index("decided_by")
    assert classes.loc["name rule: sgemm", "bound"] == "compute"
    assert math.isnan(classes.loc["name rule: sgemm", "flops"])


def test_unknown_gpus_are_refused_and_can_be_named(tmp_path):
    pytest.importorskip("pandas")
    graph = gemm_trace(tmp_path, device={"id": 0, "name": "Made-up GPU 9000"})
    with pytest.raises(daydream.Error, match="not in the catalogue"):
        daydream.roofline(graph)
    with pytest.raises(daydream.Error, match="unknown GPU 'Z9000'"):
        daydream.roofline(graph, device="Z9000")
    report = daydream.roofline(graph, device="H100-SXM5-80GB")
    assert report.device["name"] == "H100-SXM5-80GB"
    assert report.operators.set_index("name").loc["aten::mm", "ridge"] == pytest.approx(67.0e12 / 3350e9)


def test_plot_roofline_returns_axes(tmp_path):
    pytest.importorskip("pandas")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    graph = gemm_trace(tmp_path)
    ax = daydream.plot_roofline(daydream.roofline(graph), by="operators")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "V100-SXM2-32GB" in ax.get_title()
    assert daydream.plot_roofline(graph).figure is not None  # a Graph: its report is made
    with pytest.raises(ValueError, match="by must be"):
        daydream.plot_roofline(daydream.roofline(graph), by="kernels")


def test_resnet50_convolutions_are_compute_bound(real_trace):
    pytest.importorskip("pandas")
    report = daydream.roofline(daydream.load(str(real_trace)))
    ops = report.operators.set_index("name")
    assert ops.loc["aten::cudnn_convolution", "bound"] == "compute"
    assert 0.3 < ops.loc["aten::cudnn_convolution", "share_of_peak"] < 1.0
    assert ops.loc["aten::cudnn_batch_norm", "bound"] == "memory"
    assert report.summary["shaped_time_ms"] > 0.95 * report.summary["time_ms"]
