// Sharded checkpoints of labs whose ranks hold blocks of named tensors (labs/train/checkpoint_sharded.h
// is the format, checkpoint_run.h the shared save and resume flow): a tensor-parallel rank's rows or
// columns of a weight, a pipeline stage's layers, an expert-parallel rank's experts.
//
// The checkpoint holds each global tensor whole, by name, beside AdamW's moments of it:
//   "h.0.mlp.c_fc.weight"          the parameters [rows × cols] (or a vector [n]), fp32
//   "adam.m.h.0.mlp.c_fc.weight"   AdamW's first moment of it
//   "adam.v.h.0.mlp.c_fc.weight"   and its second
// A rank writes the block it holds as pieces of the flattened tensor: one piece when the block
// spans whole rows (a column-parallel slice: rows r·out/T..), else one piece per row (a
// row-parallel slice: columns r·in/T.. of every row). A rank of another layout reads its own
// block the same way, only those byte ranges: resharding is which block a rank asks for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "labs/train/checkpoint_run.h"

namespace dtl {

// A contiguous run of what a rank holds: elements [begin, end) of the flattened global tensor,
// from element `local` of the rank's flat buffers.
struct HeldRun {
  std::size_t begin = 0, end = 0, local = 0;
};

// One rank's block of the global tensor `name` of shape `shape` ([rows, cols], or [n]: one row):
// rows [row_begin, row_end) × columns [col_begin, col_end), row-major from element `offset` of
// the rank's flat buffers; or, when `runs` is given, exactly those runs (a layout no one block
// describes: the GPT's c_attn slice is rows of each of Q, K and V).
struct HeldTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t row_begin = 0, row_end = 1, col_begin = 0, col_end = 0;
  std::size_t offset = 0;
  bool saves = true;  // false: a replica whose equal copy another rank saves
  std::vector<HeldRun> runs;
  // AdamW's moments of it in the checkpoint: "adam.m." + name and "adam.v." + name unless given
  // (the MLP labs' flat buffers are "adam.m" and "adam.v" beside "params").
  std::string m_name, v_name;
};
// A whole tensor of n elements at `offset`: a vector, or a matrix the rank holds all of.
HeldTensor whole_tensor(std::string name, std::vector<std::int64_t> shape, std::size_t offset);

// The same block inside a flat tensor `flat` of `flat_size` elements that holds the whole of
// `t` from element `at` (the MLP labs' "params": every layer's weight then bias, in order),
// with the moments named `m_name`, `v_name`: how a model of named tensors reads and writes the
// ddp, zero and pipeline labs' checkpoints.
HeldTensor within_flat(const HeldTensor& t, const std::string& flat, std::size_t flat_size, std::size_t at,
                       const std::string& m_name, const std::string& v_name);

// What a rank trains, on the host: its flat parameters and AdamW's m and v (the same layout).
struct HeldState {
  std::vector<float> params, m, v;
};

// The pieces of every held block that `saves`: parameters, m and v, pointing into the staged
// copy (the save keeps it alive).
StagedPieces stage_held_tensors(const std::vector<HeldTensor>& held, HeldState state);
// Every held block (replicas too) read from the checkpoint into `state` (sized by the caller),
// each tensor's dtype and shape checked first (UsageError naming both). Returns the bytes read.
std::size_t load_held_tensors(const Manifest& m, const std::vector<HeldTensor>& held, HeldState& state);

}  // namespace dtl
