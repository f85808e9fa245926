// What the tensor-parallel split view draws, plain code so tests can check it (the lab:
// labs/tensor_parallel; Megatron-LM, Shoeybi et al. 2019 §3).
//
// The lab writes meta "tp_split" = {"T", "model", "layers", "hidden", "heads", "vocab",
// "tensors": [{"name", "rows", "cols", "split", "region"}, ...]} for one block (and the GPT's
// wte): W is [out × in], rows = output features. split_model() turns it into geometry in
// element units, each matrix cut into the bands its ranks own:
//   column      T bands of rows (output features)         f before it
//   qkv_column  Q, K and V each cut into T bands by heads  f before it
//   row         T bands of columns (input features)        g after it
//   vocab_rows  T bands of wte's rows (the vocabulary)
//   replicated  one band that every rank holds
// layout_split() places the matrices left to right, wrapping, at one scale for all (shapes
// stay comparable). tp_moment() says which of f and g a collective of the trace is.
// Malformed meta gives an empty model with a message, never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "viz/model/panels.h"
#include "viz/model/trace_data.h"

namespace dtl::viz {

enum class SplitKind : std::uint8_t { column, qkv_column, row, vocab_rows, replicated };

// A rectangle of a matrix in element units: columns [c0, c1), rows [r0, r1).
struct SplitBand {
  std::int64_t c0 = 0, c1 = 0, r0 = 0, r1 = 0;
  int owner = -1;     // the rank holding it; -1: every rank (replicated)
  std::string label;  // "rank 1", "Q rank 0", "every rank"
};

struct SplitMatrix {
  std::string name;    // "h.0.mlp.c_fc.weight"
  std::string region;  // "embedding", "attention", "mlp"
  SplitKind split = SplitKind::replicated;
  std::int64_t rows = 0, cols = 0;
  std::vector<SplitBand> bands;    // tile [0, cols) × [0, rows) exactly
  std::string short_name() const;  // "mlp.c_fc" (no "h.0." nor ".weight")
};

// Megatron's f before a column-parallel matrix, g after a row-parallel one.
struct SplitMarker {
  char op = 'f';           // 'f' or 'g'
  std::size_t matrix = 0;  // the matrix it stands beside
  bool after = false;      // g: after the matrix; f: before it
  std::string region;
};

struct SplitModel {
  int T = 0, layers = 0, hidden = 0, heads = 0;
  std::string model;                  // "gpt" or "mlp"
  std::vector<SplitMatrix> matrices;  // in the block's order (wte first for the GPT)
  std::vector<SplitMarker> markers;   // in the order of the matrices
  std::vector<std::string> notes;     // tensors left out: "tensor 3: split \"diagonal\" is not known"
  std::string message;                // why the model is empty ("" when it is not)
  bool empty() const { return matrices.empty(); }
  // The f or g marker of `region` (op 'f': before its column matrix), or -1.
  int marker_of(char op, std::string_view region) const;
};

inline const char* const kTpSplitMeta = meta_key_name(MetaKey::tp_split);
inline constexpr int kMaxSplitRanks = 4096;  // the lab's --tp limit
inline constexpr std::size_t kMaxSplitTensors = 64;

SplitModel split_model(const TraceData& d);           // from meta "tp_split"
SplitModel parse_split_model(std::string_view json);  // one meta value

const char* split_kind_name(SplitKind k);  // "column", "qkv_column", ...
const char* marker_tooltip(char op);       // what f or g does, plain and sequence parallel

// ---- layout: pixels ----

struct SplitLayout {
  float scale = 0;              // pixels per element, the same for every matrix
  std::vector<Rect> matrices;   // per matrix: its rectangle
  std::vector<Rect> slots;      // per matrix: its slot (the marker gaps on both sides, its label under it)
  std::vector<float> spine;     // per matrix: the y of the activation line through its row
  std::vector<float> marker_x;  // per marker: its centre on its matrix's spine
};
// Lays the matrices out in `area`, wrapping, at the largest scale that fits. Each slot is
// `gap` + max(matrix width, label_w[i]) + `gap` wide (the gaps hold the markers); below each
// row `label_h` for the labels. A matrix is at least `min_px` tall or wide.
SplitLayout layout_split(const SplitModel& m, Rect area, const std::vector<float>& label_w, float label_h, float gap,
                         float min_px = 6);

// ---- the collective at the cursor ----

// Which operator a collective of the trace is: the block span ("fwd block L" / "bwd block L")
// on its rank's main stream that it begins in, and its place among that block's collectives:
// plain: forward g(attention), g(MLP); backward f(MLP), f(attention) — one region for the MLP
// model. Sequence parallel: forward all-gather = f, reduce-scatter = g; backward all-gather
// = g (a second one before the reduce-scatter re-gathers the column layer's input: f's
// forward again), reduce-scatter = f.
struct TpMoment {
  bool valid = false;     // a collective was found
  bool in_block = false;  // inside a block span (else: embedding, loss, ...)
  int layer = -1;
  bool forward = true;
  char op = 0;             // 'f', 'g', or 0 (unknown)
  bool regather = false;   // sequence parallel backward: the column layer's input gathered again
  std::string region;      // "attention", "mlp"
  std::string collective;  // "all_reduce", "all_gather", "reduce_scatter"
  std::uint64_t bytes = 0;
  int rank = 0;
  int marker = -1;      // index into SplitModel::markers, or -1
  std::string caption;  // "layer 1 · backward · f before mlp.c_fc: all-reduce 32 KiB"
};
// `collective`: an event of d (kind collective). The regions come from the model's matrices.
TpMoment tp_moment(const TraceData& d, const SplitModel& m, const Event& collective);
// The collective on a comm stream in flight at t (begun, not ended; the lowest rank's), if any.
TpMoment tp_moment_at(const TraceData& d, const SplitModel& m, std::int64_t t);

std::string split_bytes(std::uint64_t bytes);  // "32 KiB", "1.5 MiB", "12 B"

}  // namespace dtl::viz
