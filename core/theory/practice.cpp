// The framework eras' defaults and their words (practice.h).
#include "core/theory/practice.h"

#include <cstdio>

namespace dtl::theory {

Practice framework_practice(Framework f) {
  Practice p;  // megatron-core: the struct's defaults
  if (f == Framework::megatron_2021) {
    p.sequence_parallel = OnOff::off;  // arrived with Korthikanti et al. 2022
    p.attention = AttentionKernel::unfused;
    p.dropout = OnOff::on;
    p.dp_comm = CommOverlap::exposed;  // reduced after the pipeline flush (Narayanan et al. 2021 §4)
  } else if (f == Framework::fsdp) {
    p.sequence_parallel = OnOff::off;  // (no TP in plain FSDP; with TP, none of Megatron's SP)
    p.kernels = ElementwiseKernels::unfused;
    p.attention = AttentionKernel::flash2;   // PyTorch's SDPA runs FlashAttention-2
    p.dp_bucket_bytes = 25 * 1024.0 * 1024;  // PyTorch DDP's bucket_cap_mb (FSDP: one unit per layer)
    p.grads = GradPrecision::bf16;
  }
  return p;
}

const char* framework_name(Framework f) {
  for (const auto& [name, value] : kFrameworkNames)
    if (value == f) return name;
  return "?";
}

std::string practice_words(const Practice& p) {
  char bucket[48];
  std::snprintf(bucket, sizeof bucket, " (%.0f MB buckets)", p.dp_bucket_bytes / 1e6);
  return std::string("sequence parallel ") + (p.sp() ? "on" : "off") + ", " +
         (p.attention == AttentionKernel::flash    ? "flash"
          : p.attention == AttentionKernel::flash2 ? "flash2"
                                                   : "unfused") +
         " attention, dropout " + (p.has_dropout() ? "on" : "off") + ", " +
         (p.kernels == ElementwiseKernels::fused ? "fused" : "unfused") + " element-wise kernels, TP " +
         (p.tp_comm == CommOverlap::exposed ? "exposed" : "overlapped") + ", DP " +
         (p.dp_comm == CommOverlap::exposed ? std::string("exposed") : "overlapped" + std::string(bucket)) + ", " +
         (p.grads == GradPrecision::fp32 ? "fp32" : "bf16") + " gradients, ZeRO-3 prefetch " +
         std::to_string(p.zero3_prefetch);
}

}  // namespace dtl::theory
