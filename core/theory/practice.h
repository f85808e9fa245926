// What a training run does beyond its parallel layout (issue 45): the choices a framework makes
// that change a step's time and memory, each with the default a practitioner expects for the
// framework era the run names (`dtlab plan|simulate --framework`), each overridable on its own.
// The step model (step_model.h, kernel_time.h) and the planner's memory (plan.h) read them, so
// `plan` and `simulate` see the same choices.
//
//   sequence parallel   Korthikanti et al. 2022: the LayerNorms, dropouts and residual adds run on
//                       b·s/t positions per TP rank (reduce-scatter + all-gather instead of the
//                       all-reduce: the same bytes, recompute.h's activations ÷ t). Off: those kernels
//                       and their activations are whole on every TP rank (10·s·b·h unsplit).
//   attention           flash: one fused causal kernel, the GPU's best (FlashAttention-2 on an A100,
//                       FlashAttention-3 / cuDNN's on an H100, as TransformerEngine runs it); flash2:
//                       FlashAttention-2 (PyTorch's SDPA) on any GPU. The s×s scores never reach HBM,
//                       the causal half of the blocks is skipped, timed at the profile's achieved
//                       rate for that kernel (gpu_profile.h). unfused: Megatron's core
//                       attention: Q·Kᵀ and P·V as batched GEMMs over the whole s×s (the mask after),
//                       the scores through HBM by the softmax (and the dropout) kernels.
//   dropout             on: GPT-3 / Megatron's 0.1 after attention and MLP and on the attention
//                       probabilities (a 1-byte mask per element kept for backward: Korthikanti's
//                       count); off: none (Llama-class pretraining).
//   kernels             fused: Megatron's fusions (apex LayerNorm, bias-GeLU, bias-dropout-add, the
//                       scaled-masked softmax); unfused: each bias add, GeLU, dropout, residual add,
//                       scale, mask and softmax its own kernel (eager PyTorch, Megatron with
//                       --no-*-fusion) — each a pass over HBM and a kernel gap (kernel_time.h).
//   TP communication    exposed: each all-reduce on the critical path (Megatron's default);
//                       overlapped: TransformerEngine's userbuffers split it under the GEMM next to
//                       it, leaving only what lasts beyond that GEMM.
//   DP communication    overlapped: the gradient reduction of the last micro-batch's backward in
//                       buckets on the comm stream (PyTorch DDP bucket_cap_mb, Megatron's
//                       --overlap-grad-reduce); exposed: one collective after the last backward.
//   gradients           fp32: Megatron's bf16 runs accumulate and reduce the gradients in fp32
//                       (arguments.py sets accumulate_allreduce_grads_in_fp32 with --bf16; DeepSpeed's
//                       BF16_Optimizer keeps fp32 gradient accumulation): 4 B per parameter held and
//                       reduced; bf16: 2 B (FSDP's MixedPrecision with a bf16 reduce_dtype).
//   ZeRO-3 prefetch     FSDP and ZeRO-3 gather each layer's parameters just before it, on a comm
//                       stream, `prefetch` layers ahead (FSDP's backward_prefetch: 1); 0: each gather
//                       waits in front of its layer.
#pragma once

#include <string>
#include <utility>

namespace dtl::theory {

enum class OnOff { off, on };
enum class AttentionKernel { flash, flash2, unfused };
enum class ElementwiseKernels { fused, unfused };
enum class CommOverlap { exposed, overlapped };
enum class GradPrecision { bf16, fp32 };
// The framework eras whose defaults dtlab knows:
//   megatron-2021  Megatron-LM / Megatron-DeepSpeed as Narayanan et al. 2021, MT-NLG and BLOOM ran:
//                  no sequence parallelism, unfused attention, dropout 0.1, Megatron's fusions, TP
//                  exposed, DP after the pipeline flush, fp32 gradients
//   megatron-core  Megatron-Core with TransformerEngine (2024): sequence parallel, flash attention,
//                  no dropout, fusions, TP exposed (--tp-comm-overlap is opt-in), DP overlapped
//                  (--overlap-grad-reduce), fp32 gradients (the default)
//   fsdp           PyTorch FSDP, eager (2023–24): flash2 (SDPA), no dropout, unfused element-wise
//                  kernels, DP overlapped, bf16 gradients, ZeRO-3 prefetch 1
enum class Framework { megatron_2021, megatron_core, fsdp };

inline constexpr std::pair<const char*, OnOff> kOnOffNames[] = {{"on", OnOff::on}, {"off", OnOff::off}};
inline constexpr std::pair<const char*, AttentionKernel> kAttentionNames[] = {
    {"flash", AttentionKernel::flash}, {"flash2", AttentionKernel::flash2}, {"unfused", AttentionKernel::unfused}};
inline constexpr std::pair<const char*, ElementwiseKernels> kKernelsNames[] = {
    {"fused", ElementwiseKernels::fused}, {"unfused", ElementwiseKernels::unfused}};
inline constexpr std::pair<const char*, CommOverlap> kOverlapNames[] = {{"exposed", CommOverlap::exposed},
                                                                        {"overlapped", CommOverlap::overlapped}};
inline constexpr std::pair<const char*, GradPrecision> kGradNames[] = {{"bf16", GradPrecision::bf16},
                                                                       {"fp32", GradPrecision::fp32}};
inline constexpr std::pair<const char*, Framework> kFrameworkNames[] = {{"megatron-2021", Framework::megatron_2021},
                                                                        {"megatron-core", Framework::megatron_core},
                                                                        {"fsdp", Framework::fsdp}};

struct Practice {
  OnOff sequence_parallel = OnOff::on;
  AttentionKernel attention = AttentionKernel::flash;
  OnOff dropout = OnOff::off;
  ElementwiseKernels kernels = ElementwiseKernels::fused;
  CommOverlap tp_comm = CommOverlap::exposed;
  CommOverlap dp_comm = CommOverlap::overlapped;
  double dp_bucket_bytes = 80e6;  // Megatron-Core's 40 M parameters per bucket, 16-bit (PyTorch DDP: 25 MiB)
  GradPrecision grads = GradPrecision::fp32;
  int zero3_prefetch = 1;
  bool sp() const { return sequence_parallel == OnOff::on; }
  bool flash() const { return attention != AttentionKernel::unfused; }
  bool has_dropout() const { return dropout == OnOff::on; }
  double grad_bytes() const { return grads == GradPrecision::fp32 ? 4 : 2; }  // per parameter, held and reduced
};

Practice framework_practice(Framework f);  // the era's defaults (above)
const char* framework_name(Framework f);
// "sequence parallel on, flash attention, dropout off, fused kernels, TP exposed, DP overlapped
// (80 MB buckets), fp32 gradients" — the report's setup line.
std::string practice_words(const Practice& p);

}  // namespace dtl::theory
