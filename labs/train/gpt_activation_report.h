// Activation memory and activation recomputation, measured against their formulas, for the
// labs that train the GPT (gpt, tensor_parallel --model gpt, grid --model gpt).
//
// The count this GPT's tensors give (gpt.h, gpt_activation_parts: fp32, no dropout) is the
// one checked, exactly; Korthikanti et al. 2022's ("Reducing Activation Recomputation in
// Large Transformer Models", §4, 16-bit activations, 1-byte dropout masks) is shown beside it,
// with the map from their terms to these tensors in the report's notes (docs/labs.md).
#pragma once

#include <string>

#include "labs/report.h"
#include "labs/train/gpt.h"
#include "labs/view_kind.h"

namespace dtl {

// What the model measured (its GptActivationMeasure), the largest over the ranks.
struct GptActivationFigures {
  double block = 0, end = 0, recomputed = 0;  // bytes: one block keeps; the end; one block's running set
  double recompute_per_block = 0;             // seconds: one block's recomputation, mean
  double forward_per_block = 0;               // seconds: one block's forward, mean
  double gradient_bits_differing = -1;        // vs a twin that keeps everything; < 0: not compared
};
GptActivationFigures gpt_activation_figures(Comm& comm, const Gpt& model);

// Korthikanti et al.'s bytes per layer for a micro-batch of c.batch sequences on `tp` ranks
// in `mode` (theory::korthikanti_layer_bytes, core/theory/recompute.h).
double korthikanti_layer_bytes(const GptConfig& c, int tp, ex::TpMode mode, theory::Recompute r);

// The forward FLOPs of one block that recomputation runs again, over the block's forward
// FLOPs (GEMMs and attention only): full 16Rh² + 4BS²h over 24Rh² + 4BS²h (it stops at
// GELU), selective 4BS²h over the same; 0 without recomputation.
double recompute_flop_ratio(const GptConfig& c, theory::Recompute r);

// Rows `prefix`activation_per_layer (a check against gpt_activation_parts), the paper's
// figure beside it, the recomputed set (a check), recomputation's time against its FLOP
// ratio, and the bit-for-bit gradient comparison (a check) when it ran.
void add_gpt_activation_rows(Report& rep, const std::string& prefix, const GptConfig& c, int tp, ex::TpMode mode,
                             theory::Recompute r, const GptActivationFigures& f);

// The activations view (viz/views/gpt/activation_view.cpp) draws each rank's activation
// bytes over a step beside these lines: meta "activation_formula.<rank>" = {"recompute",
// "blocks", "block", "end", "recomputed", "in_flight", "kept" (all in flight after their
// forward), "peak", "paper_block" (Korthikanti et al.'s layer)}, bytes. Every rank writes its own.
void publish_activation_formula(Comm& comm, const GptActivationBytes& parts, theory::Recompute r, int in_flight,
                                double paper_block);
// The views that draw it, for the labs' LabInfo::views.
inline constexpr ViewKind kActivationView{"activations"};

// With recomputation: one forward_backward of `model` and of `twin` (the same model built
// without recomputation: same config, seed, group and device) on the same batch, and the
// number of gradient elements whose bits differ, summed over the group (0 when they agree).
double recompute_gradient_mismatches(Comm& comm, Gpt& model, Gpt& twin, const int* tokens, const int* targets);

}  // namespace dtl
