// What a GPU holds beyond Korthikanti's textbook count (issue 45): activations as the run's
// practice keeps them (practice.h), and the memory frameworks hold beyond model state and
// activations, each line with its source. The planner (plan.cpp) adds them to its memory.
#pragma once

#include <string>
#include <vector>

#include "core/theory/plan.h"

namespace dtl::theory {

// One layer's activations kept for backward, bytes, on one GPU (Korthikanti et al. 2022 §4.1, each
// term by its tensor; n = s/cp positions, 16-bit, 1-byte dropout masks):
//   outside TP (÷ t only with sequence parallelism): the two norms' inputs 4·s·b·h, the attention's
//     and the MLP's inputs 2·s·b·h each, two dropout masks s·b·h each (with dropout)
//   inside TP (÷ t): Q 2·s·b·h, K and V 2·s·b·h·kv/a each, the projection's input 2·s·b·h; the MLP's
//     inner tensors: GPT fc1 and GeLU outputs 2·2·s·b·ffn, Llama gate, up, SiLU and product 4·2·s·b·ffn
//     (× k with experts: each token's k expert MLPs keep theirs)
//   scores (÷ t; unfused attention without recomputation): the softmax output 2·a·s²·b, with dropout
//     its 1-byte mask and its output 3·a·s²·b more; flash keeps only its 4-byte log-sum-exp 4·a·s·b
//   selective: no score terms; full: the layer's input 2·s·b·h (÷ t with sequence parallelism)
//   selective-op (torchtitan's op policy): the input and Llama's down output 2·s·b·h each (÷ t with
//     sequence parallelism); ÷ t: Q, V and gate (GPT: QKV and fc1), attention's output 2·s·b·h and
//     its log-sum-exp 4·a·s·b — every other tensor is recomputed
// At GPT's shape with dropout and unfused attention: s·b·h·(34 + 5·a·s/h)/t, Korthikanti's.
double layer_activation_bytes(const ModelSpec& m, const ParallelConfig& p, Recompute r);

// Beyond model state and activations, per GPU:
//   fp32 gradients      Megatron's bf16 main grads: +2 B per parameter held (ZeRO-2/3: its shard)
//   embedding           the first stage holds the (V·h)/t embedding beyond the even split Ψ/(t·p)
//   logits              the last stage's b·(s/cp)·V/t logits: 16-bit, and the fp32 copy the
//                       cross-entropy computes in and keeps for backward (6 B each)
//   recompute working   with recomputation, the layer in backward holds what was rebuilt: its
//                       activations without recomputation less those kept (one layer, one micro-batch)
//   ZeRO-3 gathered     (1 + prefetch) layers' parameters unsharded, 16-bit (layer_parameters/t · 2 B)
//   ZeRO-3 gradients    one layer's unsharded gradients before their reduce-scatter (4 B fp32, 2 B bf16)
//   NCCL buffers        per communicator the GPU is in: channels × 2 protocols × NCCL_BUFFSIZE 4 MiB
//   CUDA context        0.5 GB: the context, cuBLAS's workspace and the kernels' modules, assumed
std::vector<MemoryLine> framework_memory(const Plan& p);

}  // namespace dtl::theory
