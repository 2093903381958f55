// The built-in GPU table (docs/gpu_model.md). Every figure is the vendor's: dense peaks (no
// structured sparsity) at the boost clock; tensor-core rates with fp32 accumulation (the
// GeForce cards run fp16 with fp32 accumulation at half their fp16-accumulate rate); host links
// per direction (PCIe 3.0 x16: 15.75 GB/s, 4.0: 31.5, 5.0: 63). 0 = the GPU has no such unit
// or the vendor does not publish the figure.
#include "daydream/device.hpp"

namespace daydream {
namespace {

constexpr double T = 1e12;            // TFLOP/s
constexpr double GB = 1e9;            // GB/s, GB
constexpr double GiB = 1024.0 * 1024 * 1024;
constexpr double MiB = 1024.0 * 1024;
constexpr double kPcie3 = 15.75 * GB, kPcie4 = 31.5 * GB, kPcie5 = 63.0 * GB;

constexpr const char* kV100 =
    "NVIDIA V100 datasheet (images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf); "
    "Volta whitepaper (fp16 SIMT = 2x fp32, L2 6 MB)";
constexpr const char* kTuring = "NVIDIA Turing architecture whitepaper (2018), appendix tables";
constexpr const char* kGa102 = "NVIDIA Ampere GA102 GPU architecture whitepaper v2.1, appendix A";
constexpr const char* kA100 =
    "NVIDIA A100 datasheet (nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf); A100 whitepaper (fp16 SIMT 78 TFLOP/s, L2 40 MB)";
constexpr const char* kAda = "NVIDIA Ada Lovelace GPU architecture whitepaper v2.1, appendix A";
constexpr const char* kHopper =
    "NVIDIA H100 datasheet and Hopper architecture whitepaper v1.01 (table 3: fp16 SIMT, L2 50 MB)";

DeviceSpec spec(std::string name, std::vector<std::string> aliases, std::string vendor, int major, int minor, int sms,
                double clock_mhz, std::string source) {
  DeviceSpec s;
  s.name = std::move(name);
  s.aliases = std::move(aliases);
  s.vendor = std::move(vendor);
  s.compute_major = major;
  s.compute_minor = minor;
  s.sm_count = sms;
  s.boost_clock_mhz = clock_mhz;
  s.source = std::move(source);
  return s;
}

struct Rates {
  double fp32, fp16_simt, tf32, fp16, bf16, fp8;
};
struct Memory {
  double bandwidth, bytes, l2, watts, host;
};

DeviceSpec with(DeviceSpec s, Rates r, Memory m) {
  s.fp32_flops = r.fp32;
  s.fp16_simt_flops = r.fp16_simt;
  s.tf32_flops = r.tf32;
  s.fp16_flops = r.fp16;
  s.bf16_flops = r.bf16;
  s.fp8_flops = r.fp8;
  s.memory_bandwidth = m.bandwidth;
  s.memory_bytes = m.bytes;
  s.l2_bytes = m.l2;
  s.power_watts = m.watts;
  s.host_bandwidth = m.host;
  return s;
}

std::vector<DeviceSpec> nvidia_before_ampere() {
  return {
      with(spec("V100-SXM2-32GB", {"V100-SXM2-32GB", "V100-DGXS-32GB", "V100-SXM2", "V100"}, "NVIDIA", 7, 0, 80, 1530, kV100),
           {15.7 * T, 31.4 * T, 0, 125 * T, 0, 0}, {900 * GB, 32 * GiB, 6 * MiB, 300, kPcie3}),
      with(spec("V100-SXM2-16GB", {"V100-SXM2-16GB", "V100-DGXS-16GB"}, "NVIDIA", 7, 0, 80, 1530, kV100),
           {15.7 * T, 31.4 * T, 0, 125 * T, 0, 0}, {900 * GB, 16 * GiB, 6 * MiB, 300, kPcie3}),
      with(spec("V100-PCIE-32GB", {"V100-PCIE-32GB", "V100-PCIE"}, "NVIDIA", 7, 0, 80, 1380, kV100),
           {14 * T, 28 * T, 0, 112 * T, 0, 0}, {900 * GB, 32 * GiB, 6 * MiB, 250, kPcie3}),
      with(spec("V100-PCIE-16GB", {"V100-PCIE-16GB"}, "NVIDIA", 7, 0, 80, 1380, kV100),
           {14 * T, 28 * T, 0, 112 * T, 0, 0}, {900 * GB, 16 * GiB, 6 * MiB, 250, kPcie3}),
      with(spec("T4", {"Tesla T4", "T4"}, "NVIDIA", 7, 5, 40, 1590,
                std::string("NVIDIA T4 datasheet (t4-tensor-core-datasheet-951643.pdf); ") + kTuring),
           {8.1 * T, 16.2 * T, 0, 65 * T, 0, 0}, {320 * GB, 16 * GiB, 4 * MiB, 70, kPcie3}),
      with(spec("RTX-2080-Ti", {"RTX 2080 Ti", "2080 Ti"}, "NVIDIA", 7, 5, 68, 1545, kTuring),
           {13.4 * T, 26.9 * T, 0, 53.8 * T, 0, 0}, {616 * GB, 11 * GiB, 5.5 * MiB, 250, kPcie3}),
  };
}

std::vector<DeviceSpec> nvidia_ampere() {
  return {
      with(spec("A100-SXM4-40GB", {"A100-SXM4-40GB", "A100-SXM-40GB", "A100-PG509", "A100-SXM4", "A100"}, "NVIDIA", 8,
                0, 108, 1410, kA100),
           {19.5 * T, 78 * T, 156 * T, 312 * T, 312 * T, 0}, {1555 * GB, 40 * GiB, 40 * MiB, 400, kPcie4}),
      with(spec("A100-SXM4-80GB", {"A100-SXM4-80GB", "A100-SXM-80GB", "A100 80GB HBM2e"}, "NVIDIA", 8, 0, 108, 1410,
                kA100),
           {19.5 * T, 78 * T, 156 * T, 312 * T, 312 * T, 0}, {2039 * GB, 80 * GiB, 40 * MiB, 400, kPcie4}),
      with(spec("A100-PCIE-40GB", {"A100-PCIE-40GB", "A100-PCIE"}, "NVIDIA", 8, 0, 108, 1410, kA100),
           {19.5 * T, 78 * T, 156 * T, 312 * T, 312 * T, 0}, {1555 * GB, 40 * GiB, 40 * MiB, 250, kPcie4}),
      with(spec("A100-PCIE-80GB", {"A100-PCIE-80GB", "A100 80GB PCIe"}, "NVIDIA", 8, 0, 108, 1410, kA100),
           {19.5 * T, 78 * T, 156 * T, 312 * T, 312 * T, 0}, {1935 * GB, 80 * GiB, 40 * MiB, 300, kPcie4}),
      with(spec("RTX-3090", {"RTX 3090"}, "NVIDIA", 8, 6, 82, 1695, kGa102),
           {35.6 * T, 35.6 * T, 35.6 * T, 71 * T, 71 * T, 0}, {936 * GB, 24 * GiB, 6 * MiB, 350, kPcie4}),
      with(spec("A10", {"A10"}, "NVIDIA", 8, 6, 72, 1695, std::string("NVIDIA A10 datasheet; ") + kGa102),
           {31.2 * T, 31.2 * T, 62.5 * T, 125 * T, 125 * T, 0}, {600 * GB, 24 * GiB, 6 * MiB, 150, kPcie4}),
      with(spec("A40", {"A40"}, "NVIDIA", 8, 6, 84, 1740, std::string("NVIDIA A40 datasheet; ") + kGa102),
           {37.4 * T, 37.4 * T, 74.8 * T, 149.7 * T, 149.7 * T, 0}, {696 * GB, 48 * GiB, 6 * MiB, 300, kPcie4}),
  };
}

std::vector<DeviceSpec> nvidia_after_ampere() {
  return {
      with(spec("RTX-4090", {"RTX 4090"}, "NVIDIA", 8, 9, 128, 2520, kAda),
           {82.6 * T, 82.6 * T, 82.6 * T, 165.2 * T, 165.2 * T, 330.3 * T}, {1008 * GB, 24 * GiB, 72 * MiB, 450, kPcie4}),
      with(spec("L4", {"L4"}, "NVIDIA", 8, 9, 58, 2040, std::string("NVIDIA L4 datasheet; ") + kAda),
           {30.3 * T, 30.3 * T, 60 * T, 121 * T, 121 * T, 242.5 * T}, {300 * GB, 24 * GiB, 48 * MiB, 72, kPcie4}),
      with(spec("L40S", {"L40S"}, "NVIDIA", 8, 9, 142, 2520, std::string("NVIDIA L40S datasheet; ") + kAda),
           {91.6 * T, 91.6 * T, 183 * T, 362 * T, 362 * T, 733 * T}, {864 * GB, 48 * GiB, 96 * MiB, 350, kPcie4}),
      with(spec("H100-SXM5-80GB", {"H100-SXM5", "H100 80GB HBM3", "H100-SXM", "H100"}, "NVIDIA", 9, 0, 132, 1980,
                kHopper),
           {67 * T, 133.8 * T, 494.7 * T, 989.4 * T, 989.4 * T, 1978.9 * T},
           {3350 * GB, 80 * GiB, 50 * MiB, 700, kPcie5}),
      with(spec("H100-PCIE-80GB", {"H100-PCIE", "H100 PCIe"}, "NVIDIA", 9, 0, 114, 1755, kHopper),
           {51 * T, 102.4 * T, 378 * T, 756 * T, 756 * T, 1513 * T}, {2000 * GB, 80 * GiB, 50 * MiB, 350, kPcie5}),
      with(spec("H200-SXM-141GB", {"H200"}, "NVIDIA", 9, 0, 132, 1980,
                std::string("NVIDIA H200 datasheet (compute as H100 SXM); ") + kHopper),
           {67 * T, 133.8 * T, 494.7 * T, 989.4 * T, 989.4 * T, 1978.9 * T},
           {4800 * GB, 141 * GB, 50 * MiB, 700, kPcie5}),
      with(spec("B200", {"B200"}, "NVIDIA", 10, 0, 0, 0,
                "NVIDIA HGX B200 / DGX B200 datasheets (8-GPU figures / 8, sparse tensor rates / 2; SMs, clock and L2 not published)"),
           {75 * T, 0, 1125 * T, 2250 * T, 2250 * T, 4500 * T}, {8000 * GB, 180 * GB, 0, 1000, kPcie5}),
  };
}

// PyTorch sees each of an MI250X's two dies (GCDs) as one device: its entry is one GCD, half
// the package's figures.
std::vector<DeviceSpec> amd() {
  return {
      with(spec("MI250X-GCD", {"MI250X", "MI250"}, "AMD", 0, 0, 110, 1700,
                "AMD Instinct MI250X datasheet (package figures / 2: one GCD as PyTorch sees it)"),
           {23.95 * T, 0, 47.85 * T, 191.5 * T, 191.5 * T, 0}, {1638.4 * GB, 64 * GiB, 8 * MiB, 280, kPcie4}),
      with(spec("MI300X", {"MI300X"}, "AMD", 0, 0, 304, 2100, "AMD Instinct MI300X datasheet (dense rates)"),
           {163.4 * T, 0, 653.7 * T, 1307.4 * T, 1307.4 * T, 2614.9 * T}, {5300 * GB, 192 * GiB, 32 * MiB, 750, kPcie5}),
  };
}

}  // namespace

DeviceCatalog DeviceCatalog::builtin() {
  DeviceCatalog catalog;
  for (auto* group : {nvidia_before_ampere, nvidia_ampere, nvidia_after_ampere, amd})
    for (DeviceSpec& s : group()) catalog.add(std::move(s));
  return catalog;
}

DeviceCatalog DeviceCatalog::with_file(const std::string& path) {
  DeviceCatalog catalog = builtin();
  if (!path.empty()) catalog.load_json(path);
  return catalog;
}

}  // namespace daydream
