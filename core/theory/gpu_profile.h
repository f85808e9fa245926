// Hardware as data (issue 45): what one GPU and its links achieve, each number with its source.
// `dtlab plan` and `dtlab simulate` time every kernel and collective from these figures
// (kernel_time.h, nccl_model.h); nothing here is fitted to an end-to-end training run.
//
// Per GPU:
//   peak_flops      dense bf16 tensor-core peak (datasheet)
//   gemm_flops      the achieved cuBLAS bf16 rate at its best shape: the "maximum achievable
//                   matmul FLOPS" (MAMF) measured with mamf-finder.py (stas00/ml-engineering,
//                   compute/accelerator/README.md). kernel_time.h lowers it further for a shape
//                   whose tiles and waves do not fill the GPU.
//   memory_Bps      what a streaming kernel achieves on HBM (not the datasheet figure)
//   kernel_gap_s    the idle time between two back-to-back kernels of one stream
//   flash_*_flops   what a fused (flash) attention kernel achieves forward and backward, counting
//                   the FLOPs it executes (the causal half only), as flash-attention's benchmarks do
// Per link tier (NVLink inside a node, the network between nodes), per GPU and per direction:
//   line_Bps        the wire rate (NVLink3 12 links × 25 GB/s = 300 GB/s on an A100: the
//                   600 GB/s of the datasheet counts both directions)
//   nccl_Bps        what NCCL's model gives a ring (channels × bandwidth per channel:
//                   NCCL's topo.h counts 20 GB/s per NVLink3 link and 20.6 per NVLink4 link)
//   latency_s       one hop's latency as NCCL's tuning model charges it (nccl_model.h)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtl::theory {

// NCCL tunes by architecture (its tuning.cc tables are indexed Volta / Ampere / Hopper).
enum class GpuArch { ampere, hopper };

struct LinkTier {
  double line_Bps = 0;  // per direction, per GPU
  double nccl_Bps = 0;  // what NCCL's ring reaches: its bus bandwidth on this tier
  double latency_s = 0;
};

struct GpuProfile {
  std::string name;
  GpuArch arch = GpuArch::ampere;
  double peak_flops = 0;  // bf16 dense
  double gemm_flops = 0;  // achieved bf16 GEMM at its best shape (MAMF)
  double memory_Bps = 0;  // achieved HBM bandwidth of a streaming kernel
  double memory_datasheet_Bps = 0;
  double gpu_memory = 0;  // bytes
  int sms = 0;
  double kernel_gap_s = 0;
  double flash_forward_flops = 0, flash_backward_flops = 0;    // achieved by the GPU's best fused attention kernel
  double flash2_forward_flops = 0, flash2_backward_flops = 0;  // by FlashAttention-2 (the same on an A100)
  bool nvls = false;  // NVLink SHARP (NVSwitch 3): NCCL's NVLS all-reduce on one node
  LinkTier nvlink, network;
  std::vector<std::string> sources;  // one line per number above, in the same order
};

// "a100-sxm4-80gb", "h100-sxm5", "h200"; throws UsageError naming them.
GpuProfile gpu_profile(std::string_view name);
std::vector<std::string> gpu_profile_names();

}  // namespace dtl::theory
