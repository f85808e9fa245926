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
};
Recompute parse_recompute(std::string_view name);  // throws UsageError
const char* recompute_name(Recompute r);

}  // namespace dtl::theory
