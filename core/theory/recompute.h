// Activation recomputation (Chen et al. 2016, "Training Deep Nets with Sublinear Memory
// Cost"; Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models"): what a transformer layer keeps from its forward for its backward, and what its
// backward computes again instead. The planner (plan.h) prices it; the GPT labs run it
// (labs/train/gpt.h).
#pragma once

#include <string_view>

namespace dtl::theory {

enum class Recompute {
  none,       // keep every tensor the backward reads
  selective,  // keep all but the attention's softmax probabilities (s² per head): recompute
              // the core attention (Q·Kᵀ, softmax, ·V) in backward — Megatron's "selective"
  full,       // keep each layer's input only: rerun the layer's forward in its backward
  // torchtitan's op-level selective checkpointing (its default "selective" with option "op",
  // torchtitan/distributed/activation_checkpoint.py): of each layer's matmuls, in forward order,
  // keep the outputs of the 1st, 3rd, ... and recompute the 2nd, 4th, ...; keep attention's output;
  // recompute every element-wise op. Modelled for dense layers (the planner, not the GPT lab).
  selective_op,
};
Recompute parse_recompute(std::string_view name);  // throws UsageError
const char* recompute_name(Recompute r);

// Korthikanti et al.'s activation bytes of one transformer layer (§4: 16-bit activations,
// 1-byte dropout masks) for s positions, b sequences, hidden h, a heads on t tensor-parallel
// ranks, with or without sequence parallelism:
//   none       tp: s·b·h·(10 + 24/t + 5·a·s/(h·t)),   tp + sp: s·b·h·(34 + 5·a·s/h)/t
//   selective  tp: s·b·h·(10 + 24/t),                   tp + sp: 34·s·b·h/t
//   full       tp: 2·s·b·h,                             tp + sp: 2·s·b·h/t
// (t = 1: the forms agree, s·b·h·(34 + 5·a·s/h) with nothing recomputed.)
inline double korthikanti_layer_bytes(double s, double b, double h, double a, double t, bool sequence_parallel,
                                      Recompute r) {
  const double sbh = s * b * h;
  if (r == Recompute::full) return 2 * sbh / (sequence_parallel ? t : 1);  // each layer's input
  const double softmax = r == Recompute::none ? 5 * a * s / h : 0;         // kept only without recomputation
  if (sequence_parallel) return sbh * (34 + softmax) / t;
  return sbh * (10 + 24 / t + softmax / t);
}

}  // namespace dtl::theory
