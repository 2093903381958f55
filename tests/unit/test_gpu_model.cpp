// The GPU model (docs/gpu_model.md): the catalogue and how a trace's GPU is identified, kernel
// classes read off names, and the `gpu` scenario's arithmetic on hand-built traces (a
// compute-bound GEMM with wave quantization and a memory-bound elementwise kernel moved from an
// A100 to an H100), its identity on real traces, and the sanity law that a faster GPU never
// slows a step.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "daydream/device.hpp"
#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/scenario_helpers.hpp"
#include "unit/shared_traces.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;
using test::task_named;

namespace {

const DeviceCatalog& catalog() {
  static const DeviceCatalog builtin = DeviceCatalog::builtin();
  return builtin;
}

std::string identified(std::string_view recorded, double memory_bytes = 0) {
  const DeviceSpec* spec = catalog().identify(recorded, memory_bytes);
  return spec ? spec->name : "none";
}

/// The `deviceProperties` of an A100-SXM4-40GB as Kineto writes them.
std::string a100_properties() {
  return R"({"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42297524224, "computeMajor": 8, )"
         R"("computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, )"
         R"("regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, )"
         R"("sharedMemPerMultiprocessor": 167936, "numSms": 108})";
}

// 1024 threads x 64 registers: one block per SM (all 64K registers). 109 blocks: two waves on
// the A100's 108 SMs, one on the H100's 132.
const test::LaunchArgs kSmsPlusOne{109, 1024, 64, 0};

constexpr const char* kSgemm = "ampere_sgemm_128x64_nn";
constexpr const char* kBf16Gemm = "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32";
constexpr const char* kElementwise =
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
    "at::native::AddFunctor<float>>>(int, at::native::BinaryFunctor<float, float, float>, at::detail::Array<char*, 3>)";

/// One step launching an fp32 SIMT GEMM (1000 us, 109 one-per-SM blocks), a bf16 tensor-core
/// GEMM (500 us, same launch) and an elementwise kernel (300 us) back to back on one stream.
Graph three_kernel_step() {
  test::KinetoJson t;
  t.device(a100_properties());
  t.annotation("ProfilerStep#1", 0, 2000);
  t.cpu_op("aten::mm", 1, 20);
  t.runtime("cudaLaunchKernel", 2, 3, 1);
  t.kernel(kSgemm, 10, 1000, 1, 7, kSmsPlusOne);
  t.runtime("cudaLaunchKernel", 6, 3, 2);
  t.kernel(kBf16Gemm, 1010, 500, 2, 7, kSmsPlusOne);
  t.runtime("cudaLaunchKernel", 10, 3, 3);
  t.kernel(kElementwise, 1510, 300, 3, 7);
  t.runtime("cudaDeviceSynchronize", 30, 1790, 4);
  return test::graph_of(t.str());
}

}  // namespace

TEST_CASE("gpu catalogue: a trace's GPU identified by its recorded name (longest alias, then memory)", "[gpu]") {
  CHECK(identified("NVIDIA A100-SXM4-40GB") == "A100-SXM4-40GB");
  CHECK(identified("NVIDIA A100-SXM4-80GB") == "A100-SXM4-80GB");
  CHECK(identified("NVIDIA A100-PG509-200", 42297524224.0) == "A100-SXM4-40GB");  // ddp-convnet-a100-nccl
  CHECK(identified("NVIDIA A100 80GB PCIe") == "A100-PCIE-80GB");
  CHECK(identified("NVIDIA A10") == "A10");  // not the A100 its name begins
  CHECK(identified("Tesla V100-DGXS-32GB") == "V100-SXM2-32GB");
  CHECK(identified("Tesla V100-SXM2-16GB") == "V100-SXM2-16GB");
  CHECK(identified("NVIDIA GeForce RTX 2080 Ti") == "RTX-2080-Ti");
  CHECK(identified("NVIDIA H100 80GB HBM3") == "H100-SXM5-80GB");
  CHECK(identified("NVIDIA H100 PCIe") == "H100-PCIE-80GB");
  CHECK(identified("NVIDIA L40S") == "L40S");
  CHECK(identified("NVIDIA L4") == "L4");
  CHECK(identified("AMD Instinct MI250X") == "MI250X-GCD");
  CHECK(identified("Synthetic GPU (made-up durations)") == "none");
  const DeviceSpec& a100 = catalog().at("a100-sxm4-40gb");  // names ignore case
  CHECK(a100.peak_flops(Precision::fp16) / a100.peak_flops(Precision::tf32) == 2.0);
  CHECK(a100.ridge_point(Precision::fp16) == Approx(312e12 / 1555e9));
  CHECK_THROWS_WITH(catalog().at("Z9000"), Catch::Contains("unknown GPU 'Z9000'") && Catch::Contains("H100-SXM5-80GB"));
  // a user may name a GPU as the driver does (nvidia-smi, torch.cuda.get_device_name)
  CHECK(catalog().at("NVIDIA H200").name == "H200-SXM-141GB");
  CHECK(catalog().at("NVIDIA A100-SXM4-80GB").name == "A100-SXM4-80GB");
  CHECK_THROWS_WITH(catalog().at("H10"), Catch::Contains("unknown GPU 'H10'"));
}

TEST_CASE("gpu catalogue: a devices file adds GPUs and changes fields, its errors name file, entry and field", "[gpu]") {
  const auto path = std::filesystem::temp_directory_path() / "daydream_test_devices.json";
  const auto write = [&](const std::string& json) { std::ofstream(path) << json; };
  DeviceCatalog mine = DeviceCatalog::builtin();
  write(R"({"devices": [{"name": "Z9000", "aliases": ["Zeta 9000"], "fp32_tflops": 10, "bf16_tflops": 100,
                         "memory_bandwidth_gbps": 1000, "sm_count": 50},
                        {"name": "A100-SXM4-40GB", "boost_clock_mhz": 1275}]})");
  mine.load_json(path.string());
  CHECK(mine.identify("Zeta 9000 rev B")->name == "Z9000");
  CHECK(mine.at("Z9000").peak_flops(Precision::bf16) == 100e12);
  CHECK(mine.at("Z9000").memory_bandwidth == 1000e9);
  CHECK(mine.at("A100-SXM4-40GB").boost_clock_mhz == 1275);
  CHECK(mine.at("A100-SXM4-40GB").fp32_flops == 19.5e12);  // fields not given are kept
  write(R"({"devices": [{"name": "Y1", "fp32_tflops": 10}]})");
  CHECK_THROWS_WITH(mine.load_json(path.string()),
                    Catch::Contains("daydream_test_devices.json") && Catch::Contains("event #0") &&
                        Catch::Contains("memory_bandwidth_gbps"));
  write(R"({"devices": [{"name": "Y1", "memory_bandwidth_gbps": 100}, {"name": "Y2", "fp16_tflops": "fast"}]})");
  CHECK_THROWS_WITH(mine.load_json(path.string()), Catch::Contains("event #1") && Catch::Contains("fp16_tflops"));
  std::filesystem::remove(path);
}

TEST_CASE("kernel classes: engine and precision from the name", "[gpu]") {
  struct Case {
    const char* name;
    Engine engine;
    Precision precision;
  };
  const Case cases[] = {
      {kSgemm, Engine::simt, Precision::fp32},
      {"volta_sgemm_128x64_nn", Engine::simt, Precision::fp32},
      {"volta_h884gemm_64x64_ldg8_nn", Engine::tensor, Precision::fp16},
      {"volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", Engine::tensor, Precision::fp16},
      {"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", Engine::tensor, Precision::fp16},
      {"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn", Engine::tensor, Precision::bf16},
      {"cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4", Engine::tensor, Precision::tf32},
      // cuBLAS's fp32 GEMM without TF32 names its FFMA instruction: SIMT, whatever the family.
      {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_"
       "execute_kernel__5x_cublas",
       Engine::simt, Precision::fp32},
      {"sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_execute_segment_k_off_kernel__5x_cublas",
       Engine::tensor, Precision::tf32},
      {kBf16Gemm, Engine::tensor, Precision::bf16},
      {"void xmma_cudnn::gemm::kernel<xmma_cudnn::implicit_gemm::fprop_indexed::Kernel_traits<"
       "xmma_cudnn::Ampere_hmma_tf32_traits<unsigned int, float>>>(xmma_cudnn::Params)",
       Engine::tensor, Precision::tf32},
      {"void xmma_cudnn::gemm::kernel<xmma_cudnn::implicit_gemm::wgrad_indexed::Kernel_traits<"
       "xmma_cudnn::Ampere_hmma_fp32_traits>>(xmma_cudnn::Params)",
       Engine::tensor, Precision::fp16},
      {"void convolveNd_dgrad_float_engine<float, 3, 512, 6, 5, 3, 3, 3, false>(int, int, int, const float *)",
       Engine::simt, Precision::fp32},
      {"void convolveNd_dgrad_float_engine<__half, 3, 512, 6, 5, 3, 3, 3, false>(int, int)", Engine::simt,
       Precision::fp16},
      {"void implicit_convolveNd_sgemm<float, 3, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int)", Engine::simt,
       Precision::fp32},
      {"void cudnn::ops::nchwToNhwcKernel<__half, __half, float, false, true>(cudnn::ops::nchw2nhwc_params_t)",
       Engine::none, Precision::fp16},
      {kElementwise, Engine::none, Precision::fp32},
      {"void at::native::unrolled_elementwise_kernel<at::native::BinaryFunctor<c10::Half, c10::Half, c10::Half, "
       "at::native::AddFunctor<float>>>(int)",
       Engine::none, Precision::fp16},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16>>(at::native::ReduceOp)",
       Engine::none, Precision::bf16},
      {"void xmma_cudnn::implicit_gemm::split_k_kernel<float>(xmma_cudnn::Params)", Engine::none, Precision::fp32},
      {"flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>", Engine::tensor,
       Precision::bf16},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const KernelClass k = classify_kernel(c.name);
    CHECK(k.engine == c.engine);
    CHECK(k.precision == c.precision);
    CHECK(k.bound == (c.engine == Engine::none ? Bound::memory : Bound::compute));
    CHECK_FALSE(k.engine_rule.empty());
    CHECK_FALSE(k.precision_rule.empty());
  }
}

TEST_CASE("kernel classes: memory-efficient attention in fp32 runs as three TF32 products where there is TF32",
          "[gpu]") {
  const KernelClass f32 = classify_kernel("fmha_cutlassF_f32_aligned_64x64_rf_sm80(AttentionKernel::Params)");
  CHECK(f32.engine == Engine::tensor);
  CHECK(f32.precision == Precision::fp32);
  CHECK(f32.fp32_as_3xtf32);
  CHECK(classify_kernel("fmha_cutlassB_f32_aligned_128x64_k65536_sm80").fp32_as_3xtf32);
  const KernelClass bf16 = classify_kernel("fmha_cutlassF_bf16_aligned_64x64_rf_sm80");
  CHECK(bf16.precision == Precision::bf16);
  CHECK_FALSE(bf16.fp32_as_3xtf32);
  const DeviceSpec& a100 = catalog().at("A100-SXM4-40GB");
  const DeviceSpec& h100 = catalog().at("H100-SXM5-80GB");
  const DeviceSpec& v100 = catalog().at("V100-SXM2-32GB");
  // A third of the TF32 peak where there is one; the SIMT fp32 rate where there is not.
  CHECK(kernel_flops(a100, f32, {Engine::tensor, Precision::fp32}) == Approx(a100.tf32_flops / 3));
  CHECK(kernel_flops(v100, f32, {Engine::tensor, Precision::fp32}) == Approx(v100.fp32_flops));
  // Under autocast to bf16 on an A100: 52 -> 312 TFLOP/s; moved to an H100: by the TF32 peaks.
  CHECK(autocast_time_ratio(f32, nullptr, a100, Precision::bf16) == Approx(156.0 / 3 / 312));
  CHECK(kernel_time_ratio(f32, nullptr, a100, h100, {Engine::tensor, Precision::fp32}) ==
        Approx(a100.tf32_flops / h100.tf32_flops));
  CHECK(kernel_time_ratio(f32, nullptr, a100, a100, {Engine::tensor, Precision::fp32}) == 1.0);
}

TEST_CASE("gpu scenario: a GEMM and an elementwise kernel moved from an A100 to an H100, exactly", "[gpu]") {
  Graph graph = three_kernel_step();
  const DeviceSpec& a100 = catalog().at("A100-SXM4-40GB");
  const DeviceSpec& h100 = catalog().at("H100-SXM5-80GB");
  REQUIRE(graph.launch_config(task_named(graph, kSgemm)) != nullptr);
  REQUIRE(graph.launch_config(task_named(graph, kSgemm))->blocks == 109);
  test::apply(graph, "gpu:target=H100");
  // Compute-bound: peak ratio at its precision (fp32 SIMT stays SIMT: PyTorch leaves TF32 off
  // for matmul) times waves x SMs: (1 x 132) / (2 x 108).
  const double waves = (1.0 * 132) / (2.0 * 108);
  CHECK(graph.task(task_named(graph, kSgemm)).duration_ns == std::llround(1'000'000 * (19.5 / 67.0) * waves));
  CHECK(graph.task(task_named(graph, kBf16Gemm)).duration_ns == std::llround(500'000 * (312.0 / 989.4) * waves));
  // Memory-bound: the bandwidth ratio.
  CHECK(graph.task(task_named(graph, kElementwise)).duration_ns == std::llround(300'000 * (1555.0 / 3350.0)));
  // The same ratios through the library call, as users of the model reach them.
  const KernelClass sgemm = classify_kernel(kSgemm);
  LaunchConfig launch;
  launch.blocks = 109, launch.threads_per_block = 1024, launch.registers_per_thread = 64;
  CHECK(kernel_time_ratio(sgemm, &launch, a100, h100, {Engine::simt, Precision::fp32}) ==
        Approx(19.5 / 67.0 * waves));
  launch.blocks = 108;  // one wave on both: the peak ratio x SMs ratio is undone by the waves
  CHECK(kernel_time_ratio(sgemm, &launch, a100, h100, {Engine::simt, Precision::fp32}) ==
        Approx(19.5 / 67.0 * 132.0 / 108.0));
  CHECK(kernel_time_ratio(sgemm, nullptr, a100, h100, {Engine::simt, Precision::fp32}) == Approx(19.5 / 67.0));
}

TEST_CASE("gpu scenario: TF32 on the target for fp32 convolutions traced without it, as PyTorch does", "[gpu]") {
  const DeviceSpec& v100 = catalog().at("V100-SXM2-32GB");
  const DeviceSpec& a100 = catalog().at("A100-SXM4-40GB");
  const char* conv = "volta_scudnn_128x64_relu_interior_nn_v1";
  const KernelClass k = classify_kernel(conv);
  REQUIRE(k.engine == Engine::simt);
  const KernelRun on_a100 = run_on(k, v100, a100, true, false);
  CHECK((on_a100.engine == Engine::tensor && on_a100.precision == Precision::tf32));
  CHECK(run_on(k, v100, a100, false, false).engine == Engine::simt);
  CHECK(run_on(classify_kernel("volta_sgemm_128x64_nn"), v100, a100, true, false).engine ==
        Engine::simt);  // cuBLAS GEMMs keep fp32 (torch.backends.cuda.matmul.allow_tf32 is False)
  // The way back: a TF32 kernel on a GPU without TF32 runs in fp32 on the SIMT cores.
  const KernelClass tf32 = classify_kernel("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4");
  const KernelRun on_v100 = run_on(tf32, a100, v100, true, false);
  CHECK((on_v100.engine == Engine::simt && on_v100.precision == Precision::fp32));
  CHECK(kernel_time_ratio(tf32, nullptr, a100, v100, on_v100) == Approx(156.0 / 15.7));
}

TEST_CASE("gpu scenario: refuses without a target, for an unknown GPU, and for a trace naming no known GPU", "[gpu]") {
  Graph graph = three_kernel_step();
  CHECK_THROWS_WITH(test::apply(graph, "gpu"), Catch::Contains("target=<name>"));
  CHECK_THROWS_WITH(test::apply(graph, "gpu:target=Z9000"), Catch::Contains("unknown GPU 'Z9000'"));
  test::KinetoJson t;  // the builder's default device: {"id": 0, "name": "Test GPU"}
  t.annotation("ProfilerStep#1", 0, 100);
  t.runtime("cudaLaunchKernel", 1, 3, 1);
  t.kernel(kSgemm, 10, 50, 1, 7);
  Graph unnamed = test::graph_of(t.str());
  CHECK_THROWS_WITH(test::apply(unnamed, "gpu:target=H100"),
                    Catch::Contains("'Test GPU' is not in the catalogue") && Catch::Contains("from=<name>"));
  const auto slow = std::filesystem::temp_directory_path() / "daydream_test_slow_gpu.json";
  std::ofstream(slow) << R"({"devices": [{"name": "Snail", "memory_bandwidth_gbps": 1e-18, "fp32_tflops": 1e-18}]})";
  Graph snail = unnamed;
  CHECK_THROWS_WITH(test::apply(snail, "gpu:target=Snail,from=A100-SXM4-40GB,devices=" + slow.string()),
                    Catch::Contains("would take") && Catch::Contains("check the target's figures"));
  std::filesystem::remove(slow);
  test::apply(unnamed, "gpu:target=H100,from=A100-SXM4-40GB");  // named by the user
  CHECK(unnamed.task(task_named(unnamed, kSgemm)).duration_ns == std::llround(50'000 * 19.5 / 67.0));
}

TEST_CASE("gpu scenario on real traces: the traced GPU as target changes nothing, a faster GPU never slows a step",
          "[gpu][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  for (const char* relative : {"resnet-2080ti-sgd/resnet_kineto.json.gz", "ddp-convnet-a100-nccl/nccl_data.json.gz",
                               "resnet50-v100-dataloader/workers0", "ddp-resnet-v100-rank0"}) {
    for (const auto& path : test::traces_at(relative)) {
      INFO(path.string());
      const Graph baseline = build_graph(load_trace(path));
      const DeviceSpec& traced = traced_device(catalog(), baseline.gpus(), path.string());
      Graph same = baseline;
      test::apply(same, "gpu:target=" + traced.name);
      CHECK(same.fingerprint() == baseline.fingerprint());
      Graph faster = baseline;
      test::apply(faster, "gpu:target=H200");  // at least as fast as each traced GPU in every figure
      const auto before = test::step_times(baseline), after = test::step_times(faster);
      REQUIRE(before.size() == after.size());
      for (std::size_t i = 0; i < before.size(); ++i) CHECK(after[i] <= before[i]);
    }
  }
}

// ------------------------------------------------------------------------- amp on the GPU model

namespace {

constexpr const char* kTf32Conv = "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw";
constexpr const char* kSimtConv = "void convolveNd_dgrad_float_engine<float, 3, 512, 6, 5, 3, 3, 3, false>(int)";
constexpr const char* kHalfAdd = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<c10::Half>>(int)";
constexpr const char* kAdamUpdate = "void at::native::vectorized_elementwise_kernel<4, at::native::AddcdivFunctor<float>>(int)";

/// One A100 step: forward (a TF32 convolution 1000 us, an fp32 SIMT GEMM 1600 us), backward on
/// another thread (a SIMT convolution 800 us, an fp32 add 400 us, an fp16 add 100 us, a 2 us
/// kernel), then the optimizer (an Adam update 300 us), back to back on one stream.
Graph amp_step() {
  test::KinetoJson t;
  t.device(a100_properties());
  t.annotation("ProfilerStep#1", 0, 6000);
  t.cpu_op("aten::conv2d", 1, 10);
  t.runtime("cudaLaunchKernel", 2, 3, 1);
  t.kernel(kTf32Conv, 20, 1000, 1);
  t.cpu_op("aten::mm", 12, 10);
  t.runtime("cudaLaunchKernel", 13, 3, 2);
  t.kernel(kSgemm, 1020, 1600, 2);
  t.annotation("autograd::engine::evaluate_function: ConvolutionBackward0", 30, 20, 2);
  t.runtime("cudaLaunchKernel", 31, 3, 3, 2);
  t.kernel(kSimtConv, 2620, 800, 3);
  t.runtime("cudaLaunchKernel", 35, 3, 4, 2);
  t.kernel(kElementwise, 3420, 400, 4);
  t.runtime("cudaLaunchKernel", 39, 3, 5, 2);
  t.kernel(kHalfAdd, 3820, 100, 5);
  t.runtime("cudaLaunchKernel", 43, 3, 6, 2);
  t.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", 3920, 2, 6);
  t.annotation("Optimizer.step#Adam.step", 60, 20);
  t.runtime("cudaLaunchKernel", 61, 3, 7);
  t.kernel(kAdamUpdate, 3922, 300, 7);
  t.runtime("cudaDeviceSynchronize", 90, 4140, 8);
  return test::graph_of(t.str());
}

TimeNs duration_of(const Graph& graph, const char* name) { return graph.task(task_named(graph, name)).duration_ns; }

}  // namespace

TEST_CASE("amp on the GPU model: each kernel as autocast runs it on the traced A100, exactly", "[gpu][amp]") {
  Graph graph = amp_step();
  const auto out = test::apply(graph, "amp:casts=0,grad_scaler=0");
  // Tensor-core TF32 -> fp16: the peak ratio 156 / 312.
  CHECK(duration_of(graph, kTf32Conv) == 500'000);
  // A SIMT GEMM (TF32 off for matmul) moves to the tensor cores: 19.5 / 312.
  CHECK(duration_of(graph, kSgemm) == std::llround(1'600'000 * 19.5 / 312.0));
  // A SIMT convolution cuDNN chose over TF32: as its TF32 alternative, 156 / 312.
  CHECK(duration_of(graph, kSimtConv) == 400'000);
  // Memory-bound fp32: half the bytes. Already fp16: unchanged. The optimizer step: unchanged.
  CHECK(duration_of(graph, kElementwise) == 200'000);
  CHECK(duration_of(graph, kHalfAdd) == 100'000);
  CHECK(duration_of(graph, kAdamUpdate) == 300'000);
  // The shortest kernel of the trace (2 us) is the floor: the 2 us fill stays 2 us.
  CHECK(duration_of(graph, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)") ==
        2'000);
  const std::string notes = test::all_notes(out);
  CHECK_THAT(notes, Catch::Contains("autocast to fp16 on A100-SXM4-40GB (no kernel below the trace's shortest, 2000 ns)"));
  CHECK_THAT(notes, Catch::Contains("1 kernels compute tensor tf32 -> tensor fp16: 1.000 -> 0.500 ms"));
  CHECK_THAT(notes, Catch::Contains("1 optimizer-step kernels (fp32 master weights, outside autocast) kept"));
  // The library call gives the same ratios.
  const DeviceSpec& a100 = catalog().at("A100-SXM4-40GB");
  CHECK(autocast_time_ratio(classify_kernel(kSgemm), nullptr, a100, Precision::bf16) == Approx(19.5 / 312.0));
  CHECK(autocast_time_ratio(classify_kernel(kHalfAdd), nullptr, a100, Precision::fp16) == 1.0);
}

TEST_CASE("amp on the GPU model: operators autocast runs in fp32 keep their kernels' time", "[gpu][amp]") {
  constexpr const char* kLayerNorm =
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, const float*)";
  constexpr const char* kLayerNormBackward =
      "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(const float*, int)";
  constexpr const char* kSum =
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
      "at::native::sum_functor<float, float, float>>>>(at::native::ReduceOp<float>)";
  constexpr const char* kSoftmax =
      "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, const float*, int)";
  constexpr const char* kMegatronSoftmax =
      "void scaled_masked_softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10>(float*, const float*, int)";
  constexpr const char* kApexLayerNorm = "void cuApplyLayerNorm<float, float, float>(float*, float*, int, int)";
  test::KinetoJson t;
  t.device(a100_properties());
  t.annotation("ProfilerStep#1", 0, 6000);
  // Forward (the step's main thread): operators on the float32 list keep their time, others halve.
  t.cpu_op("aten::native_layer_norm", 1, 4);
  t.runtime("cudaLaunchKernel", 2, 2, 1);
  t.kernel(kLayerNorm, 20, 400, 1);
  t.cpu_op("aten::sum", 6, 4);
  t.runtime("cudaLaunchKernel", 7, 2, 2);
  t.kernel(kSum, 420, 400, 2);
  t.cpu_op("aten::add", 11, 4);
  t.runtime("cudaLaunchKernel", 12, 2, 3);
  t.kernel(kElementwise, 820, 400, 3);
  // No operator recorded: PyTorch's persistent softmax by its name; other libraries' kernels halve.
  t.runtime("cudaLaunchKernel", 16, 2, 4);
  t.kernel(kSoftmax, 1220, 400, 4);
  t.runtime("cudaLaunchKernel", 19, 2, 5);
  t.kernel(kApexLayerNorm, 1620, 400, 5);
  // Backward (the autograd thread): a listed operator's backward keeps its time; a sum halves.
  t.annotation("autograd::engine::evaluate_function: NativeLayerNormBackward0", 30, 20, 2);
  t.cpu_op("aten::native_layer_norm_backward", 31, 4, 2);
  t.runtime("cudaLaunchKernel", 32, 2, 6, 2);
  t.kernel(kLayerNormBackward, 2020, 400, 6);
  t.cpu_op("aten::sum", 36, 4, 2);
  t.runtime("cudaLaunchKernel", 37, 2, 7, 2);
  t.kernel(kSum, 2420, 400, 7);
  t.runtime("cudaLaunchKernel", 41, 2, 8, 2);  // the trace's shortest kernel (2 us): the floor
  t.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", 2820, 2, 8);
  t.runtime("cudaDeviceSynchronize", 60, 3000, 9);
  Graph graph = test::graph_of(t.str());
  const auto out = test::apply(graph, "amp:casts=0,grad_scaler=0");
  const auto durations_of = [&](const char* name) {
    std::vector<TimeNs> durations;  // in task order: the forward's before the backward's
    for (TaskId k = 0; k < graph.num_tasks(); ++k)
      if (graph.task(k).kind == TaskKind::kernel && graph.name(k) == name) durations.push_back(graph.task(k).duration_ns);
    return durations;
  };
  CHECK(durations_of(kLayerNorm) == std::vector<TimeNs>{400'000});
  CHECK(durations_of(kSum) == std::vector<TimeNs>{400'000, 200'000});  // forward kept, backward halved
  CHECK(durations_of(kElementwise) == std::vector<TimeNs>{200'000});
  CHECK(durations_of(kSoftmax) == std::vector<TimeNs>{400'000});
  CHECK(durations_of(kApexLayerNorm) == std::vector<TimeNs>{200'000});
  CHECK(durations_of(kLayerNormBackward) == std::vector<TimeNs>{400'000});
  CHECK_THAT(test::all_notes(out),
             Catch::Contains("4 kernels of operators autocast runs in fp32 (PyTorch's float32 list) kept, 1.600 ms: "
                             "native_layer_norm 1, native_layer_norm_backward 1, softmax kernel 1, sum 1"));
  // The library calls: names with or without aten::, the phase, and kernel names.
  CHECK(autocast_fp32_operator("aten::_softmax", true) == "_softmax");
  CHECK(autocast_fp32_operator("aten::_softmax", false).empty());
  CHECK(autocast_fp32_operator("_log_softmax_backward_data", false) == "_log_softmax_backward_data");
  CHECK(autocast_fp32_operator("aten::addmm", true).empty());
  CHECK(autocast_fp32_operator("aten::summary", true).empty());
  CHECK(autocast_fp32_kernel(kMegatronSoftmax).empty());
  CHECK(autocast_fp32_kernel(kLayerNormBackward) == "layer_norm kernel");
  CHECK(autocast_fp32_kernel(kElementwise).empty());
  // Both together: the operator first, else the kernel's name (what amp and Python ask).
  CHECK(autocast_fp32(kElementwise, "aten::sum", true) == "sum");
  CHECK(autocast_fp32(kSoftmax, "aten::add", true) == "softmax kernel");
  CHECK(autocast_fp32(kElementwise, "", true).empty());
  // A kernel in an anonymous namespace is classed by its whole name, not cut at "(anonymous".
  CHECK(classify_kernel("void at::native::(anonymous namespace)::f<c10::Half>(c10::Half*)").precision ==
        Precision::fp16);
}

TEST_CASE("amp on the GPU model: fixed factors, unknown GPUs, bf16 without bf16 units", "[gpu][amp]") {
  SECTION("tensor_core or other given: the paper's fixed factors") {
    Graph graph = amp_step();
    test::apply(graph, "amp:casts=0,tensor_core=4,grad_scaler=0");
    CHECK(duration_of(graph, kTf32Conv) == 250'000);
    CHECK(duration_of(graph, kElementwise) == 200'000);  // other: its default 2
  }
  SECTION("a GPU the catalogue does not know: the fixed factors, and a note that says so") {
    test::KinetoJson t;  // the builder's default device: "Test GPU"
    t.annotation("ProfilerStep#1", 0, 100);
    t.runtime("cudaLaunchKernel", 1, 3, 1);
    t.kernel(kTf32Conv, 10, 30, 1);
    const Graph base = test::graph_of(t.str());
    Graph graph = base;
    const auto out = test::apply(graph, "amp:casts=0");
    CHECK(duration_of(graph, kTf32Conv) == 10'000);
    CHECK_THAT(test::all_notes(out), Catch::Contains("does not know the trace's GPU ('Test GPU')"));
    // Named by the user: 30 -> 15 us, were it not the trace's shortest kernel (the floor).
    Graph named = base;
    test::apply(named, "amp:casts=0,device=A100-SXM4-40GB");
    CHECK(duration_of(named, kTf32Conv) == 30'000);
  }
  SECTION("bf16 on a V100 runs its GEMMs at the fp32 rate; dtype is fp16 or bf16") {
    Graph graph = amp_step();
    const auto out = test::apply(graph, "amp:casts=0,dtype=bf16,device=V100-SXM2-32GB");
    CHECK(duration_of(graph, kSgemm) == 1'600'000);
    CHECK_THAT(test::all_notes(out), Catch::Contains("V100-SXM2-32GB has no bf16 tensor cores"));
    CHECK_THROWS_WITH(test::apply(graph, "amp:dtype=int8"), Catch::Contains("dtype 'int8' is not one autocast runs in"));
  }
  SECTION("a devices file's GPU whose fp16 peak vanishes: an error naming the task, not an overflow") {
    const auto file = std::filesystem::temp_directory_path() / "daydream_test_amp_snail.json";
    std::ofstream(file) << R"({"devices": [{"name": "Snail", "memory_bandwidth_gbps": 1000, "fp32_tflops": 10, )"
                           R"("fp16_tflops": 1e-18}]})";
    Graph graph = amp_step();
    CHECK_THROWS_WITH(test::apply(graph, "amp:device=Snail,devices=" + file.string()),
                      Catch::Contains("would take") && Catch::Contains("check the Snail's figures"));
    std::filesystem::remove(file);
  }
}

TEST_CASE("amp on the GPU model: GradScaler's step waits for the backward pass on the GPU", "[gpu][amp]") {
  Graph graph = amp_step();
  const auto out = test::apply(graph, "amp:casts=0");
  // The optimizer step's first task on the loop's thread waits for the fill kernel, the last
  // GPU task before the step's first kernel on the stream.
  const TaskId fill =
      task_named(graph, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)");
  const TaskId step = task_named(graph, "Optimizer.step#Adam.step");
  const auto edge = test::edge_between(graph, fill, step);
  REQUIRE(edge.has_value());
  CHECK(edge->type == EdgeType::sync);
  CHECK_THAT(test::all_notes(out), Catch::Contains("GradScaler: 1 optimizer steps wait for the GPU's backward pass"));
  Graph without = amp_step();
  test::apply(without, "amp:casts=0,grad_scaler=0");
  CHECK_FALSE(test::edge_between(without, fill, task_named(without, "Optimizer.step#Adam.step")).has_value());
}
