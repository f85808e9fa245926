// The tiny GPT's shape and its tensor table (labs/train/gpt.h is the model): what a run
// configures, how each tensor is cut across the tensor-parallel group, how it starts, and
// the part of the model one pipeline stage holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exercises/tensor_parallel.h"
#include "labs/train/param_layout.h"

namespace dtl {

struct GptConfig {
  int vocab = 64, seq = 16, hidden = 32, heads = 4, layers = 2, batch = 2;
  int rows() const { return seq * batch; }  // tokens per step, R
};

// Empty when `c` can run on `tp` tensor-parallel ranks in `mode`; otherwise the first
// constraint it breaks, in words (the lab exits with code 2 on it).
std::string gpt_config_problem(const GptConfig& c, int tp, ex::TpMode mode);

// How a tensor is cut across the tp group (exercises' column_parallel_slice / row_parallel_slice).
enum class GptSplit : std::uint8_t {
  replicated,  // every rank holds all of it
  column,      // rows [r·out/T, (r+1)·out/T): c_fc weight and bias
  qkv_column,  // the column slice of each of the Q, K and V blocks: c_attn weight and bias
  row,         // columns [r·in/T, (r+1)·in/T): both c_proj weights
  vocab_rows,  // rows [r·V/T, (r+1)·V/T): wte
};

// What a tensor starts as (GPT-2's initialization): a weight matrix or embedding drawn from
// N(0, std²), a bias at 0, a LayerNorm gain at 1.
enum class GptStart : std::uint8_t { drawn, zeros, ones };

struct GptTensor {
  std::string name;                       // GPT-2's name, e.g. "h.0.attn.c_attn.weight"
  std::vector<std::int64_t> full_shape;   // in the whole model
  std::vector<std::int64_t> local_shape;  // on this rank
  Range range;                            // this rank's elements in the flat buffers
  GptSplit split = GptSplit::replicated;
  // Under sequence parallelism its gradient here covers only this rank's rows: the
  // all-reduce after backward sums it (LayerNorm weights and biases, wpe).
  bool sequence_partial = false;
  std::size_t id = 0;  // its index in the whole model's table: which random stream initializes it
  GptStart start = GptStart::drawn;
};

// The part of the model one pipeline stage holds (see the top of this file); the default
// is the whole model. last = -1: through the last block.
struct GptSpan {
  int first = 0, last = -1;
  bool embedding = true, head = true;  // wte and wpe; ln_f and the tied head (with wte)
};

}  // namespace dtl
