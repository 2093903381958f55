// Work per kernel and the roofline report (docs/gpu_model.md, "Work per kernel" and "Roofline
// report"): exact FLOPs and bytes of hand-built traces whose operators record their shapes, the
// bound decided by intensity against the ridge point, the name rule without shapes, malformed
// shapes counted and skipped, unknown devices refused; and on the real ResNet-50 trace, the
// forward convolutions' FLOPs per image against the known 4.1 GMAC of ResNet-50.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "daydream/roofline.hpp"
#include "unit/shared_traces.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;

namespace {

/// A V100-SXM2-32GB as Kineto records it: 15.7 TFLOP/s fp32 over 900 GB/s, ridge 17.44 FLOP/B.
constexpr const char* kV100 = R"({"id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079899648})";

const DeviceCatalog& catalog() {
  static const DeviceCatalog builtin = DeviceCatalog::builtin();
  return builtin;
}

std::string shapes(const std::string& dims, const std::string& types, std::int64_t sequence = -1) {
  std::string args = R"("Input Dims": )" + dims + R"(, "Input type": )" + types;
  if (sequence >= 0) args += R"(, "Sequence number": )" + std::to_string(sequence);
  return args;
}

/// One operator (0..100 us) on thread 1 launching one kernel (`kernel_us` long).
test::KinetoJson one_op(const std::string& op, const std::string& args, const std::string& kernel,
                        double kernel_us = 50) {
  test::KinetoJson t;
  t.device(kV100);
  t.cpu_op(op, 0, 100, 1, args);
  t.runtime("cudaLaunchKernel", 10, 5, 1);
  t.kernel(kernel, 20, kernel_us, 1);
  return t;
}

Graph graph_of(const test::KinetoJson& t) { return build_graph(parse_kineto_json(t.str(), "roofline.json")); }

const OperatorWork& work_named(const Graph& g, const std::vector<OperatorWork>& work, std::string_view name) {
  for (std::size_t i = 0; i < work.size(); ++i)
    if (g.string(g.operators()[i].name) == name) return work[i];
  FAIL("no recorded operator " << name);
  throw std::logic_error("unreachable");
}

const DeviceSpec& v100() { return catalog().at("V100-SXM2-32GB"); }

}  // namespace

TEST_CASE("roofline: an addmm's FLOPs are 2*M*N*K, its bytes A + B + C + bias", "[roofline]") {
  // bias [64], A [32, 128], B [128, 64]
  const Graph g = graph_of(one_op("aten::addmm", shapes("[[64], [32, 128], [128, 64], [], []]",
                                                      R"(["float", "float", "float", "Scalar", "Scalar"])"),
                                  "volta_sgemm_128x64_nn"));
  REQUIRE(g.operators().size() == 1);
  const auto work = operator_work(g);
  REQUIRE(work[0].status == OperatorWork::Status::known);
  CHECK(work[0].flops == 2.0 * 32 * 64 * 128);
  CHECK(work[0].bytes == (32.0 * 128 + 128 * 64 + 32 * 64 + 64) * 4);
  CHECK(work[0].rule == "gemm");
  CHECK(work[0].dtype == Precision::fp32);

  const auto kernels = kernel_work(g, v100());
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].by_shapes);
  CHECK(kernels[0].flops == 2.0 * 32 * 64 * 128);
  // Intensity 524288 / 57600 = 9.1 FLOP/B, under the fp32 ridge (15.7 T / 900 G = 17.4): this
  // small GEMM is memory-bound, whatever its name says.
  CHECK(kernels[0].ridge == Approx(15.7e12 / 900e9));
  CHECK(kernels[0].kernel.bound == Bound::memory);
  CHECK(classify_kernel("volta_sgemm_128x64_nn").bound == Bound::compute);
}

TEST_CASE("roofline: intensity against the ridge decides compute vs memory", "[roofline]") {
  // [1024, 1024] x [1024, 1024]: 2^31 FLOPs over 12 MiB, 170.7 FLOP/B > 17.4.
  const Graph g = graph_of(one_op("aten::mm", shapes("[[1024, 1024], [1024, 1024]]", R"(["float", "float"])"),
                                  "volta_sgemm_128x64_nn", 200));
  const auto kernels = kernel_work(g, v100());
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].flops == 2.0 * 1024 * 1024 * 1024);
  CHECK(kernels[0].bytes == 3.0 * 1024 * 1024 * 4);
  CHECK(kernels[0].kernel.bound == Bound::compute);

  const RooflineReport report = make_roofline(g, v100());
  REQUIRE(report.classes.size() == 1);
  const RooflineRow& row = report.classes[0];
  CHECK(row.name == "simt fp32");
  CHECK(row.bound == Bound::compute);
  CHECK(row.decided_by == "shapes: intensity 170.67 vs ridge 17.44");
  CHECK(row.achieved_flops() == Approx(2.0 * 1024 * 1024 * 1024 / 200e-6));
  CHECK(row.share_of_peak() == Approx(2.0 * 1024 * 1024 * 1024 / 200e-6 / 15.7e12));
  CHECK(row.expected_ns() == Approx(2.0 * 1024 * 1024 * 1024 / 15.7e12 * 1e9));
  // On an H100 (named, not traced) the same GEMM is compute-bound against its own fp32 ridge.
  const RooflineReport h100 = make_roofline(g, roofline_device(catalog(), g, "H100-SXM5-80GB"));
  CHECK(h100.device.name == "H100-SXM5-80GB");
  CHECK(h100.classes[0].decided_by == "shapes: intensity 170.67 vs ridge 20.00");
}

TEST_CASE("roofline: a convolution's FLOPs are 2*N*K*C*R*S*P*Q, its output from the backward node", "[roofline]") {
  // input [8, 3, 32, 32], weight [16, 3, 3, 3]; the autograd node of sequence number 7 records
  // the output gradient [8, 16, 16, 16] (stride 2).
  test::KinetoJson t = one_op("aten::cudnn_convolution",
                              shapes("[[8, 3, 32, 32], [16, 3, 3, 3], [], []]",
                                     R"(["float", "float", "GenericList", "GenericList"])", 7),
                              "volta_scudnn_128x64_relu_interior_nn_v1");
  t.cpu_op("CudnnConvolutionBackward", 200, 100, 2, shapes("[[8, 16, 16, 16]]", R"(["float"])", 7));
  const Graph g = graph_of(t);
  const auto work = operator_work(g);
  const OperatorWork& conv = work_named(g, work, "aten::cudnn_convolution");
  REQUIRE(conv.status == OperatorWork::Status::known);
  CHECK(conv.rule == "convolution forward");
  CHECK(conv.flops == 2.0 * 8 * 16 * 3 * 3 * 3 * 16 * 16);
  CHECK(conv.bytes == (8.0 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 8 * 16 * 16 * 16) * 4);
  CHECK(work_named(g, work, "CudnnConvolutionBackward").status == OperatorWork::Status::no_rule);

  SECTION("without the backward node the output size is unknown: counted, kernel classed by name") {
    const Graph forward_only = graph_of(one_op(
        "aten::cudnn_convolution",
        shapes("[[8, 3, 32, 32], [16, 3, 3, 3], [], []]", R"(["float", "float", "GenericList", "GenericList"])", 7),
        "volta_scudnn_128x64_relu_interior_nn_v1"));
    const RooflineReport report = make_roofline(forward_only, v100());
    CHECK(report.unusable_operators == 1);
    CHECK(report.first_unusable.find("output size unknown") != std::string::npos);
    CHECK(report.shaped_kernels == 0);
    REQUIRE(report.classes.size() == 1);
    CHECK(report.classes[0].decided_by == "name rule: scudnn");
    CHECK(report.classes[0].bound == Bound::compute);
  }
}

TEST_CASE("roofline: convolution backward, both gradients and the cuDNN input/weight split", "[roofline]") {
  const std::string go = "[32, 64, 28, 28]", x = "[32, 32, 56, 56]", w = "[64, 32, 3, 3]";
  const double forward = 2.0 * 32 * 64 * 32 * 9 * 28 * 28;
  SECTION("convolution_backward(grad_output, input, weight, ...): 2x forward") {
    const Graph g = graph_of(one_op("aten::convolution_backward",
                                    shapes("[" + go + ", " + x + ", " + w + ", []]",
                                           R"(["float", "float", "float", "GenericList"])"),
                                    "void cudnn::detail::dgrad_engine<float>(int)"));
    const auto work = operator_work(g);
    CHECK(work[0].flops == 2 * forward);
    CHECK(work[0].bytes == (32.0 * 64 * 28 * 28 + 2 * (32.0 * 32 * 56 * 56) + 2 * (64.0 * 32 * 9)) * 4);
  }
  SECTION("cudnn_convolution_backward around _input and _weight: each its forward FLOPs, none left outside") {
    // The operator around is written after the ones inside, as Kineto writes events as they end.
    test::KinetoJson t;
    t.device(kV100);
    t.cpu_op("aten::cudnn_convolution_backward_input", 10, 100, 1,
             shapes("[[], " + go + ", " + w + "]", R"(["GenericList", "float", "float"])"));
    t.runtime("cudaLaunchKernel", 20, 5, 1);
    t.kernel("void cudnn::detail::dgrad_engine<float>(int)", 30, 100, 1);
    t.cpu_op("aten::cudnn_convolution_backward_weight", 150, 100, 1,
             shapes("[[], " + go + ", " + x + "]", R"(["GenericList", "float", "float"])"));
    t.runtime("cudaLaunchKernel", 160, 5, 2);
    t.kernel("void cudnn::cnn::wgrad_alg0_engine<float>(int)", 170, 100, 2);
    t.cpu_op("aten::cudnn_convolution_backward", 0, 300, 1,
             shapes("[" + x + ", " + go + ", " + w + "]", R"(["float", "float", "float"])"));
    const Graph g = graph_of(t);
    REQUIRE(g.operators().size() == 3);
    CHECK(g.operators()[0].parent == 2);  // _input, inside the backward written last
    CHECK(g.operators()[1].parent == 2);
    const auto work = operator_work(g);
    CHECK(work_named(g, work, "aten::cudnn_convolution_backward_input").flops == forward);
    CHECK(work_named(g, work, "aten::cudnn_convolution_backward_weight").flops == forward);
    CHECK(work_named(g, work, "aten::cudnn_convolution_backward").flops == 0);  // all in the two inside
    double total = 0;
    for (const KernelWork& k : kernel_work(g, v100())) total += k.flops;
    CHECK(total == 2 * forward);
  }
}

TEST_CASE("roofline: elementwise bytes are the inputs plus the output", "[roofline]") {
  SECTION("add(a, b, alpha): two inputs read, the output written") {
    const Graph g = graph_of(one_op("aten::add", shapes("[[4, 256], [4, 256], []]", R"(["float", "float", "Scalar"])"),
                                    "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>(int)"));
    const auto work = operator_work(g);
    CHECK(work[0].rule == "elementwise");
    CHECK(work[0].bytes == 3.0 * 1024 * 4);
    CHECK(work[0].flops == 1024);
    const auto kernels = kernel_work(g, v100());
    CHECK(kernels[0].by_shapes);
    CHECK(kernels[0].kernel.bound == Bound::memory);
  }
  SECTION("broadcast: [8, 1] + [1, 16] writes [8, 16]; fp16 counts 2 bytes") {
    const Graph g = graph_of(one_op("aten::mul", shapes("[[8, 1], [1, 16]]", R"(["c10::Half", "c10::Half"])"),
                                    "mul_kernel_cuda"));
    const auto work = operator_work(g);
    CHECK(work[0].bytes == (8.0 + 16 + 128) * 2);
    CHECK(work[0].dtype == Precision::fp16);
    // The name marks no precision: the operator's data type gives it, and the SIMT fp16 ridge.
    const auto kernels = kernel_work(g, v100());
    CHECK(kernels[0].kernel.precision == Precision::fp16);
    CHECK(kernels[0].kernel.precision_rule == "operator data type");
    CHECK(kernels[0].ridge == Approx(31.4e12 / 900e9));
  }
  SECTION("clamp_min(self, min, out): the out= tensor is written, not read") {
    const Graph g = graph_of(one_op("aten::clamp_min", shapes("[[4, 256], [], [4, 256]]", R"(["float", "Scalar", "float"])"),
                                    "void at::native::vectorized_elementwise_kernel<4, clamp_min<float>>(int)"));
    CHECK(operator_work(g)[0].bytes == 2.0 * 1024 * 4);
  }
  SECTION("shapes that do not broadcast are unusable, not a crash") {
    const Graph g = graph_of(one_op("aten::add", shapes("[[4, 3], [5, 3]]", R"(["float", "float"])"), "elementwise"));
    CHECK(operator_work(g)[0].status == OperatorWork::Status::unusable);
  }
}

TEST_CASE("roofline: an operator's work goes to the kernels inside it by time, not twice", "[roofline]") {
  // linear > addmm: the work is addmm's; its two GEMM kernels (30 and 10 us) share it 3:1; the
  // split-k reduction beside them keeps its name rule.
  test::KinetoJson t;
  t.device(kV100);
  t.cpu_op("aten::linear", 0, 200, 1, shapes("[[64, 512], [256, 512], [256]]", R"(["float", "float", "float"])"));
  t.cpu_op("aten::addmm", 10, 180, 1,
           shapes("[[256], [64, 512], [512, 256], [], []]", R"(["float", "float", "float", "Scalar", "Scalar"])"));
  t.runtime("cudaLaunchKernel", 20, 5, 1);
  t.kernel("volta_sgemm_64x64_nn", 30, 30, 1);
  t.runtime("cudaLaunchKernel", 40, 5, 2);
  t.kernel("volta_sgemm_32x32_nn", 60, 10, 2);
  t.runtime("cudaLaunchKernel", 50, 5, 3);
  t.kernel("void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>)", 70, 4, 3);
  t.cpu_op("aten::view", 300, 10, 1, shapes("[[64, 256], []]", R"(["float", "GenericList"])"));
  const Graph g = graph_of(t);
  CHECK(g.operators().size() == 2);  // the view launches nothing: not kept
  const auto work = operator_work(g);
  const double flops = 2.0 * 64 * 256 * 512;
  CHECK(work_named(g, work, "aten::addmm").flops == flops);
  CHECK(work_named(g, work, "aten::linear").flops == 0);
  const auto kernels = kernel_work(g, v100());
  REQUIRE(kernels.size() == 3);
  CHECK(kernels[0].flops == Approx(0.75 * flops));
  CHECK(kernels[1].flops == Approx(0.25 * flops));
  CHECK_FALSE(kernels[2].by_shapes);
  CHECK(kernels[2].kernel.engine_rule == "split-k reduction");
  const RooflineReport report = make_roofline(g, v100());
  REQUIRE(!report.operators.empty());
  CHECK(report.operators[0].name == "aten::addmm");
  CHECK(report.operators[0].flops == Approx(flops));
}

TEST_CASE("roofline: without shapes every kernel is classed by its name", "[roofline]") {
  test::KinetoJson t;
  t.device(kV100);
  t.cpu_op("aten::mm", 0, 100);
  t.runtime("cudaLaunchKernel", 10, 5, 1);
  t.kernel("volta_sgemm_128x64_nn", 20, 50, 1);
  t.cpu_op("aten::relu", 100, 100);
  t.runtime("cudaLaunchKernel", 110, 5, 2);
  t.kernel("void at::native::vectorized_elementwise_kernel<4, relu<float>>(int)", 120, 20, 2);
  const Graph g = graph_of(t);
  CHECK(g.operators().empty());
  const RooflineReport report = make_roofline(g, v100());
  CHECK(report.shaped_kernels == 0);
  CHECK(report.expected.empty());
  REQUIRE(report.classes.size() == 2);
  CHECK(report.classes[0].decided_by == "name rule: sgemm");
  CHECK(report.classes[0].bound == Bound::compute);
  CHECK(std::isnan(report.classes[0].achieved_flops()));
  CHECK(report.classes[1].decided_by == "name rule: no GEMM or convolution in the name");
  CHECK(report.classes[1].bound == Bound::memory);
  REQUIRE(report.operators.size() == 2);
  CHECK(report.operators[0].name == "aten::mm");  // the innermost operator names the row
}

TEST_CASE("roofline: malformed shapes are counted at import and skipped, never fatal", "[roofline][bad-input]") {
  for (const std::string dims : {R"([[2, -3]])", R"("oops")", R"([[2, 3], 7])", R"([[2, 3.5]])", R"([[[2], 3]])"}) {
    CAPTURE(dims);
    const Trace trace =
        parse_kineto_json(one_op("aten::relu", R"("Input Dims": )" + dims, "relu_kernel").str(), "bad.json");
    CHECK(trace.shapes.empty());
    CHECK(trace.report.get("malformed_input_shapes") == 1);
    const Graph g = build_graph(trace);
    CHECK(make_roofline(g, v100()).malformed_operators == 1);
  }
  SECTION("as many types as shapes") {
    const Trace trace = parse_kineto_json(
        one_op("aten::relu", shapes("[[2, 3], []]", R"(["float"])"), "relu_kernel").str(), "bad.json");
    CHECK(trace.shapes.empty());
    CHECK(trace.report.get("malformed_input_shapes") == 1);
  }
  SECTION("huge dimensions: no overflow, the work is out of range and unusable") {
    const std::string big = "9000000000000000000";
    const Graph g = graph_of(one_op("aten::mm", shapes("[[" + big + ", " + big + "], [" + big + ", " + big + "]]",
                                                      R"(["float", "float"])"),
                                    "volta_sgemm_128x64_nn"));
    const auto work = operator_work(g);
    REQUIRE(work.size() == 1);
    CHECK(work[0].status == OperatorWork::Status::known);  // 1.5e57 FLOPs: large, finite in double
    CHECK(std::isfinite(work[0].flops));
  }
  SECTION("a tensor list (newer PyTorch) is kept as its elements") {
    const Trace trace = parse_kineto_json(
        one_op("aten::_foreach_add_", shapes("[[[2, 3], [4]], [[2, 3], [4]], []]", R"(["TensorList", "TensorList", "Scalar"])"),
               "multi_tensor_apply_kernel")
            .str(),
        "list.json");
    REQUIRE(trace.shapes.size() == 1);
    CHECK(trace.shapes.operand(0, 0).tensor_list);
    CHECK(trace.shapes.operand(0, 0).dims[0] == 10);
    const auto work = operator_work(build_graph(trace));
    CHECK(work[0].rule == "optimizer");
    CHECK(work[0].bytes == (10.0 + 10 + 10) * 4);  // both lists read, the first written
  }
}

TEST_CASE("roofline: the device is the trace's or the one named, and unknown ones are refused", "[roofline]") {
  test::KinetoJson t = one_op("aten::relu", "", "relu_kernel");
  t.device(R"({"id": 0, "name": "Made-up GPU 9000"})");
  const Graph g = graph_of(t);
  CHECK_THROWS_WITH(roofline_device(catalog(), g),
                    Catch::Contains("GPU 'Made-up GPU 9000' is not in the catalogue") && Catch::Contains("--device NAME"));
  CHECK_THROWS_WITH(roofline_device(catalog(), g, "Z9000"), Catch::Contains("unknown GPU 'Z9000'"));
  CHECK(roofline_device(catalog(), g, "a100-sxm4-40gb").name == "A100-SXM4-40GB");
  CHECK(roofline_device(catalog(), graph_of(one_op("aten::relu", "", "relu_kernel"))).name == "V100-SXM2-32GB");
}

TEST_CASE("roofline: cuDNN's split-k convolutions are SIMT math, not split-k reductions", "[roofline][gpu]") {
  const KernelClass k = classify_kernel("volta_scudnn_128x128_stridedB_splitK_small_nn_v1");
  CHECK(k.engine == Engine::simt);
  CHECK(k.bound == Bound::compute);
  CHECK(classify_kernel("void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>)").engine_rule ==
        "split-k reduction");
}

TEST_CASE("real traces: ResNet-50's forward convolutions are 2 x 4.1 GMAC per image", "[real][roofline]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto files = test::traces_at("resnet50-v100-dataloader/workers0");
  REQUIRE(files.size() == 1);
  const Graph g = build_graph(load_trace(files[0]));
  const auto work = operator_work(g);
  REQUIRE(!work.empty());
  // The images are those of the stem convolution (3 input channels), counted once per forward
  // pass: the batch size is its input's first dimension.
  double forward_flops = 0, images = 0;
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (work[i].rule != "convolution forward" || work[i].status != OperatorWork::Status::known || work[i].flops <= 0)
      continue;
    forward_flops += work[i].flops;
    const auto input = g.operator_shapes().operand(g.operators()[i].shapes, 0).dims;
    if (input.size() == 4 && input[1] == 3) images += static_cast<double>(input[0]);
  }
  CHECK(images == 6 * 32);  // 6 steps of batch 32
  // ResNet-50 at 224x224: 4.09 GMAC in its convolutions (torchvision; 4.1 with the classifier):
  // 8.18 GFLOP at 2 FLOPs per multiply-add. Tolerance 2%: the known figure is rounded.
  CHECK(forward_flops / images == Approx(2 * 4.09e9).epsilon(0.02));

  const RooflineReport report = make_roofline(g, roofline_device(catalog(), g));
  CHECK(report.device.name == "V100-SXM2-32GB");
  CHECK(report.unusable_operators == 0);
  CHECK(static_cast<double>(report.shaped_ns) > 0.95 * static_cast<double>(report.kernel_ns));
  const auto row = std::find_if(report.operators.begin(), report.operators.end(),
                                [](const RooflineRow& r) { return r.name == "aten::cudnn_convolution"; });
  REQUIRE(row != report.operators.end());
  CHECK(row->bound == Bound::compute);
  CHECK(row->share_of_peak() > 0.3);
  CHECK(row->share_of_peak() < 1.0);  // no kernel beats the roof
  const auto mm = std::find_if(report.operators.begin(), report.operators.end(),
                               [](const RooflineRow& r) { return r.name == "aten::mm"; });
  REQUIRE(mm != report.operators.end());
  CHECK(mm->flops > 0);
}

TEST_CASE("real traces: DLRM's GEMMs get FLOPs from their shapes", "[real][roofline]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto files = test::traces_at("dlrm-v100-8ranks/kineto");
  REQUIRE(!files.empty());
  const Graph g = build_graph(load_trace(files[0]));
  const RooflineReport report = make_roofline(g, roofline_device(catalog(), g));
  for (const char* name : {"aten::mm", "aten::addmm", "aten::bmm"}) {
    CAPTURE(name);
    const auto row = std::find_if(report.operators.begin(), report.operators.end(),
                                  [&](const RooflineRow& r) { return r.name == name; });
    REQUIRE(row != report.operators.end());
    CHECK(row->flops > 0);
  }
}

TEST_CASE("roofline: a row of fp32 memory-efficient attention without shapes has a third of the TF32 roof",
          "[roofline]") {
  // fmha_cutlassF_f32 computes fp32 as three TF32 products (KernelClass::fp32_as_3xtf32): on an
  // A100 its roof is 156 / 3 = 52 TFLOP/s, for the kernel and for the rows it dominates, not the
  // 19.5 TFLOP/s of fp32 SIMT that an (engine, precision) pair alone would give.
  test::KinetoJson t;
  t.device(R"({"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42505273344})");
  t.cpu_op("aten::_efficient_attention_forward", 0, 100);
  t.runtime("cudaLaunchKernel", 10, 5, 1);
  t.kernel("fmha_cutlassF_f32_aligned_64x64_rf_sm80(AttentionKernel::Params)", 20, 50, 1);
  const Graph g = graph_of(t);
  const DeviceSpec& a100 = catalog().at("A100-SXM4-40GB");
  const std::vector<KernelWork> kernels = kernel_work(g, a100);
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].peak_flops == a100.tf32_flops / 3);
  const RooflineReport report = make_roofline(g, a100);
  REQUIRE(report.classes.size() == 1);
  CHECK(report.classes[0].peak_flops == a100.tf32_flops / 3);
  REQUIRE(report.operators.size() == 1);
  CHECK(report.operators[0].peak_flops == a100.tf32_flops / 3);
}
