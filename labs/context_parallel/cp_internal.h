// Helpers shared by cp_exchange.cpp (the ring) and cp_collectives.cpp (all-gather, Ulysses):
// the views of a rank's rows and the [K | V] chunk cut from its qkv rows (layout: cp_exchange.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/vocab.h"
#include "labs/context_parallel/cp_exchange.h"

namespace dtl::cp {

// What one rank's part of a layer looks like.
struct CpLocal {
  CpShape s;
  int P = 1, rank = 0;
  int n = 0;             // positions held, S/P
  std::size_t rows = 0;  // n·B
  int w = 0;             // A·d
  std::vector<int> pos;  // this rank's positions, ascending
};

inline CpLocal cp_local(Comm& cp, const CpLayer& layer) {
  CpLocal l;
  l.s = layer.heads();
  l.P = cp.size(), l.rank = cp.rank();
  l.n = layer.shape.seq / l.P;
  l.rows = std::size_t(l.n) * std::size_t(l.s.batch);
  l.w = l.s.width();
  l.pos = cp_positions(layer.split, layer.shape.seq, l.P, l.rank);
  return l;
}

// Every rank's positions one after the other, rank 0 first: the positions of a buffer that
// an all-gather (or Ulysses's all-to-all) filled block by block.
inline std::vector<int> all_positions(const CpLayer& layer, int P) {
  std::vector<int> all;
  for (int q = 0; q < P; ++q) {
    const std::vector<int> mine = cp_positions(layer.split, layer.shape.seq, P, q);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  return all;
}

// The [K | V] tail of each qkv row [rows × 3w] → a chunk [rows × 2w] that can travel.
inline std::vector<float> kv_chunk(const float* qkv, std::size_t rows, int w) {
  std::vector<float> kv(rows * std::size_t(2 * w));
  for (std::size_t r = 0; r < rows; ++r)
    std::copy(qkv + r * std::size_t(3 * w) + w, qkv + (r + 1) * std::size_t(3 * w), kv.data() + r * std::size_t(2 * w));
  return kv;
}

// Its way back: a [dK | dV] chunk [rows × 2w] into the tail of the dqkv rows [rows × 3w].
inline void put_kv_grad(const std::vector<float>& dkv, std::vector<float>& dqkv, std::size_t rows, int w) {
  const std::size_t kv_w = std::size_t(2 * w), qkv_w = std::size_t(3 * w);
  for (std::size_t r = 0; r < rows; ++r)
    std::copy_n(dkv.begin() + std::ptrdiff_t(r * kv_w), kv_w, dqkv.begin() + std::ptrdiff_t(r * qkv_w) + w);
}

// Views: Q of qkv rows, and K or V of a [K | V] chunk, `n` positions `pos`.
inline CpRows q_rows(const float* qkv, int w, const int* pos, int n) { return {qkv, 3 * w, pos, n}; }
inline CpRows k_rows(const float* kv, int w, const int* pos, int n) { return {kv, 2 * w, pos, n}; }
inline CpRows v_rows(const float* kv, int w, const int* pos, int n) { return {kv + w, 2 * w, pos, n}; }

// A compute span's label on the rank's timeline ("ring block", forward): where a viewer sees
// the next hop's transfer run beside the block it overlaps.
inline std::uint16_t span_label(Comm& cp, const char* name, Pass pass) {
  return cp.trace() ? cp.trace()->label(name, Role{.pass = pass}) : 0;
}

// The compute spans the lab reads each rank's attention time from: "ring block" (one per ring
// step, cp_exchange.cpp) and "attention block" (the one block of all-gather CP and Ulysses).
inline constexpr const char* kRingBlockSpan = "ring block";
inline constexpr const char* kAttentionBlockSpan = "attention block";
inline ScopedSpan attention_span(Comm& cp, Pass pass) {
  return ScopedSpan(cp.trace(), cp.global_rank(), EventKind::compute, span_label(cp, kAttentionBlockSpan, pass));
}

}  // namespace dtl::cp
