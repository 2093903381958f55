"""The GPU model from Python (docs/gpu_model.md, docs/python.md): the catalogue, kernel classes,
the GPU a trace ran on, and the gpu scenario's identity (the traced GPU as target changes nothing)."""

from pathlib import Path

import pytest

import daydream

REPO = Path(__file__).resolve().parents[2]
V100_TRACE = REPO.parent / "shared" / "traces" / "ddp-resnet-v100-rank0" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"


def test_catalogue_lists_the_gpus_with_sources_and_a_devices_file_extends_it(tmp_path):
    catalog = {d["name"]: d for d in daydream.gpus()}
    a100 = catalog["A100-SXM4-40GB"]
    assert (a100["fp32_tflops"], a100["tf32_tflops"], a100["bf16_tflops"]) == (19.5, 156.0, 312.0)
    assert a100["memory_bandwidth_gbps"] == 1555.0 and "datasheet" in a100["source"]
    assert all(d["source"] for d in catalog.values())
    extra = tmp_path / "devices.json"
    extra.write_text('{"devices": [{"name": "Z9000", "memory_bandwidth_gbps": 1000, "fp32_tflops": 10}]}')
    assert daydream.gpus(str(extra))[-1]["name"] == "Z9000"
    extra.write_text('{"devices": [{"name": "Z9000"}]}')
    with pytest.raises(daydream.Error, match="memory_bandwidth_gbps"):
        daydream.gpus(str(extra))


def test_kernel_class_names_the_rule_that_decided():
    assert daydream.kernel_class("volta_h884gemm_64x64_ldg8_nn") == {
        "engine": "tensor", "precision": "fp16", "bound": "compute", "engine_rule": "h884", "precision_rule": "h884"}
    assert daydream.kernel_class("void at::native::vectorized_elementwise_kernel<4, float>(int)")["bound"] == "memory"


def test_autocast_fp32_names_the_listed_operator_or_kernel():
    softmax = "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, int)"
    add = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"
    assert daydream.autocast_fp32(softmax) == "softmax kernel"
    assert daydream.autocast_fp32(add, operator="aten::sum") == "sum"
    assert daydream.autocast_fp32(add, operator="aten::sum", forward=False) is None  # backward: the gradients' dtype
    assert daydream.autocast_fp32(add, operator="aten::native_layer_norm_backward", forward=False) == \
        "native_layer_norm_backward"
    assert daydream.autocast_fp32(add, operator="aten::add") is None


def test_traced_gpu_and_the_gpu_scenario_identity():
    if not V100_TRACE.exists():
        pytest.skip(f"trace absent: {V100_TRACE}")
    graph = daydream.load(str(V100_TRACE))
    assert graph.traced_gpu()["name"] == "V100-SXM2-32GB"
    same = daydream.predict(graph, "gpu:target=V100-SXM2-32GB")
    assert same.predicted_ms == same.baseline_ms
    faster = daydream.predict(graph, "gpu:target=A100")
    assert faster.predicted_ms < faster.baseline_ms
    with pytest.raises(daydream.Error, match="unknown GPU 'Z9000'"):
        daydream.predict(graph, "gpu:target=Z9000")
