// Option rows several labs share (labs/option_table.h): the training precision, on/off
// switches, and the MLP's and the small GPT's shape. A lab adds them to its own table; the
// fields they bind have the same names in every lab's settings (shape, batch, steps, ...).
#pragma once

#include "core/comm/dtype.h"
#include "core/theory/recompute.h"
#include "labs/option_table.h"

namespace dtl {

// --precision: fp32, or mixed precision with 16-bit weights and gradients (fp32 master, m, v).
inline const EnumNames<DType> kPrecisionNames = {{DType::f32, "fp32"}, {DType::bf16, "bf16"}, {DType::f16, "fp16"}};
inline const EnumNames<bool> kOnOffNames = {{false, "off"}, {true, "on"}};
// --recompute: what a GPT layer keeps for its backward (core/theory/recompute.h).
inline const EnumNames<theory::Recompute> kRecomputeNames = {
    {theory::Recompute::none, "none"}, {theory::Recompute::selective, "selective"}, {theory::Recompute::full, "full"}};
inline constexpr const char* kRecomputeHelp =
    "activation recomputation: none, selective (the attention's softmax again in backward), full (each layer's "
    "forward again, keeping its input only)";

// The MLP labs' model and run length (DDP, ZeRO, pipeline): width and depth of the MLP
// (settings.shape), the global batch and the timed steps.
struct MlpRowDefaults {
  int width, depth, batch, steps;
  const char* depth_help = "linear layers of the MLP";
  const char* batch_help = "global batch (split over ranks)";
};

template <typename Settings>
void add_mlp_rows(OptionTable<Settings>& t, const MlpRowDefaults& d) {
  t.integer(
       "width", [](Settings& s) -> int& { return s.shape.width; }, d.width, 1, 1 << 16, "hidden width of the MLP")
      .integer(
          "depth", [](Settings& s) -> int& { return s.shape.layers; }, d.depth, 1, 1024, d.depth_help)
      .integer("batch", &Settings::batch, d.batch, 1, 1 << 24, d.batch_help)
      .integer("steps", &Settings::steps, d.steps, 1, 1 << 20,
               "timed training steps per run (--repeat runs, after 1 warm-up step)");
}

// The tensor-parallel and grid labs' model (an MLP of blocks, or the GPT's extra heads and
// vocabulary) and its training steps.
struct BlockRowDefaults {
  int layers, hidden, heads, seq, batch, vocab, steps;
  const char* layers_help;
  const char* batch_help;
};

template <typename Settings>
void add_block_rows(OptionTable<Settings>& t, const BlockRowDefaults& d) {
  t.integer("layers", &Settings::layers, d.layers, 1, 1024, d.layers_help)
      .integer("hidden", &Settings::hidden, d.hidden, 1, 1 << 16, "hidden size h")
      .integer("heads", &Settings::heads, d.heads, 1, 1024, "attention heads (GPT)")
      .integer("seq", &Settings::seq, d.seq, 1, 1 << 16, "sequence length s")
      .integer("batch", &Settings::batch, d.batch, 1, 1 << 16, d.batch_help)
      .integer("vocab", &Settings::vocab, d.vocab, 2, 1 << 20, "vocabulary V (GPT)")
      .integer("steps", &Settings::steps, d.steps, 1, 1 << 20, "training steps (AdamW)");
}

}  // namespace dtl
