// The GPU profiles (gpu_profile.h): one table, each number beside its source.
#include "core/theory/gpu_profile.h"

#include "core/error.h"

namespace dtl::theory {

namespace {

// Shared by every profile (the sources say where each came from).
constexpr double kKernelGap = 1.0e-6;           // NVIDIA blog "Getting Started with CUDA Graphs" (A. Gray, 2019):
                                                // launch-bound short kernels ran 3.8 µs apart for 2.9 µs of work
constexpr double kNvlinkHopLatency = 3.4e-6;    // NCCL tuning.cc hwLat[NVLINK][Ring][Simple]
constexpr double kNetworkHopLatency = 14.0e-6;  // NCCL tuning.cc hwLat[NET][Ring][Simple] (2.18+)

const char* kGemmSource =
    "achieved bf16 GEMM: MAMF table, stas00/ml-engineering compute/accelerator/README.md (mamf-finder.py, "
    "mean of 100 iterations at the best shape)";
const char* kGapSource =
    "kernel gap 1 µs: NVIDIA blog 'Getting Started with CUDA Graphs' (2019), 3.8 µs per "
    "launch-bound kernel against 2.9 µs of kernel time";
const char* kLatencySource = "hop latency: NCCL src/graph/tuning.cc hwLat, Ring/Simple: NVLink 3.4 µs, network 14 µs";

GpuProfile a100() {
  GpuProfile g;
  g.name = "a100-sxm4-80gb";
  g.arch = GpuArch::ampere;
  g.peak_flops = 312e12;
  g.gemm_flops = 271.2e12;
  g.memory_Bps = 1.80e12;
  g.memory_datasheet_Bps = 2.039e12;
  g.gpu_memory = 80e9;
  g.sms = 108;
  g.kernel_gap_s = kKernelGap;
  g.flash_forward_flops = 0.73 * 312e12;   // 228 TFLOP/s
  g.flash_backward_flops = 0.63 * 312e12;  // 197 TFLOP/s
  g.flash2_forward_flops = g.flash_forward_flops, g.flash2_backward_flops = g.flash_backward_flops;
  g.nvls = false;
  g.nvlink = {300e9, 208e9, kNvlinkHopLatency};
  g.network = {25e9, 24e9, kNetworkHopLatency};
  g.sources = {
      "peak 312 TFLOP/s bf16 dense, 2,039 GB/s HBM2e, 80 GB: NVIDIA A100 datasheet (2021); 108 SMs: A100 whitepaper",
      std::string(kGemmSource) + ": A100 SXM 271.2 TFLOP/s (86.9 %) at 1024×10240×5120, torch 2.6.0+cu126",
      "achieved HBM 1.80 TB/s (88 % of 2.04): NVIDIA developer forum 'Trouble to Reach Peak Bandwidth of A100' "
      "(2025), confirmed by Nsight Compute; the GTC 2025 talk it cites saw ~90 % at best",
      kGapSource,
      "NVLink3: 12 links × 25 GB/s = 300 GB/s per direction (the datasheet's 600 GB/s is both directions); NCCL "
      "reaches 208 GB/s between two A100s over their 12 links (nccl-tests issue #178, all_reduce busbw; NCCL's own "
      "planning figure, src/graph/topo.h SM80_NVLINK_BW, is 20 GB/s per link = 240)",
      "network: one HDR 200 Gb/s NIC per GPU (DGX A100) = 25 GB/s; NCCL reaches 24 GB/s per NIC (nccl-tests issue "
      "#119: 3 nodes with 4 HDR NICs each for 8 A100s peaked at 96 GB/s bus bandwidth)",
      kLatencySource,
      "flash attention: FlashAttention-2 (Dao 2023, arXiv:2307.08691 §4.1) reaches up to 73 % of the A100's peak "
      "forward and up to 63 % backward (its benchmarks count the causal half's FLOPs); shorter causal sequences "
      "run below these maxima",
  };
  return g;
}

GpuProfile h100() {
  GpuProfile g;
  g.name = "h100-sxm5";
  g.arch = GpuArch::hopper;
  g.peak_flops = 989e12;
  g.gemm_flops = 794.5e12;
  g.memory_Bps = 2.83e12;
  g.memory_datasheet_Bps = 3.35e12;
  g.gpu_memory = 80e9;
  g.sms = 132;
  g.kernel_gap_s = kKernelGap;
  g.flash_forward_flops = 740e12;
  g.flash_backward_flops = 740e12 * 0.63 / 0.73;          // 639 TFLOP/s
  g.flash2_forward_flops = 0.35 * 989e12;                 // 346 TFLOP/s
  g.flash2_backward_flops = 0.35 * 989e12 * 0.63 / 0.73;  // 299 TFLOP/s
  g.nvls = true;
  g.nvlink = {450e9, 370.8e9, kNvlinkHopLatency};
  g.network = {50e9, 48.5e9, kNetworkHopLatency};
  g.sources = {
      "peak 989 TFLOP/s bf16 dense, 3.35 TB/s HBM3, 80 GB: NVIDIA H100 datasheet (2023); 132 SMs: H100 whitepaper",
      std::string(kGemmSource) + ": H100 SXM 794.5 TFLOP/s (80.3 %) at 2048×2048×13312, torch 2.7.0+cu126",
      "achieved HBM 2.83 TB/s: device-to-device copy measured by tests/gpu/run.sh on an H100 (docs/cluster.md)",
      kGapSource,
      "NVLink4: 18 links × 25 GB/s = 450 GB/s per direction (900 GB/s both); NCCL counts 20.6 GB/s per link "
      "(topo.h SM90_NVLINK_BW) = 370.8 GB/s, and its maintainer: 'NCCL can get an effective NVLink bandwidth of "
      "370GB/s' (nccl-tests issue #212)",
      "network: one NDR 400 Gb/s NIC per GPU (DGX H100) = 50 GB/s; 48.5 GB/s effective (ConnectX-7, "
      "astra-sim's calbusbw.h CX7_BW)",
      kLatencySource,
      "flash attention: FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608) reaches 740 TFLOP/s forward in "
      "bf16/fp16 on an H100 SXM5 (75 %); backward assumed at FlashAttention-2's backward/forward ratio on the "
      "A100 (63/73): 639 TFLOP/s; FlashAttention-2 (PyTorch's SDPA) 'only 35 %' on an H100 (the same paper): 346 "
      "TFLOP/s forward, 299 backward",
  };
  return g;
}

GpuProfile h200() {
  GpuProfile g = h100();
  g.name = "h200";
  g.memory_Bps = 3.96e12;
  g.memory_datasheet_Bps = 4.8e12;
  g.gpu_memory = 141e9;
  g.sources[0] = "peak 989 TFLOP/s bf16 dense, 4.8 TB/s HBM3e, 141 GB: NVIDIA H200 datasheet (2024); 132 SMs";
  g.sources[1] = std::string(kGemmSource) + ": the H100 SXM's 794.5 TFLOP/s ('H200 is the same')";
  g.sources[2] =
      "achieved HBM 3.96 TB/s: device-to-device copy measured by tests/gpu/run.sh on an H200 "
      "(docs/cluster.md; another run read 4.22)";
  return g;
}

}  // namespace

std::vector<std::string> gpu_profile_names() { return {"a100-sxm4-80gb", "h100-sxm5", "h200"}; }

GpuProfile gpu_profile(std::string_view name) {
  if (name == "a100-sxm4-80gb") return a100();
  if (name == "h100-sxm5") return h100();
  if (name == "h200") return h200();
  throw UsageError("unknown GPU profile '" + std::string(name) + "'; the profiles are a100-sxm4-80gb, h100-sxm5, h200");
}

}  // namespace dtl::theory
