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

// The compute spans the lab and the viewer read each rank's attention from, told apart by
// their roles (core/trace/vocab.h), never by their words: a ring step's block ("ring block":
// the ring's own point-to-point algorithm, the step on the event, cp_exchange.cpp) and the one
// block of all-gather CP and Ulysses ("attention block": the library collective it is built on).
inline Role ring_block_role(Pass pass) { return Role{.algorithm = AlgorithmKind::ring, .pass = pass}; }
inline Role attention_block_role(CollectiveKind c, Pass pass) {
  return Role{.collective = c, .algorithm = AlgorithmKind::library, .pass = pass};
}
inline bool is_ring_block(const Role& r) { return r.algorithm == AlgorithmKind::ring && r.pass != Pass::none; }
inline bool is_attention_block(const Role& r) {
  return r.algorithm == AlgorithmKind::library && r.collective != CollectiveKind::none && r.pass != Pass::none;
}
// A timed phase of one algorithm (the viewer knows which from it): the ring's own algorithm,
// or the library collective all-gather CP and Ulysses are made of.
inline Role cp_phase_role(CpAlgo a) {
  if (a == CpAlgo::ring) return Role{.algorithm = AlgorithmKind::ring, .part = RunPart::timed};
  return Role{.collective = a == CpAlgo::all_gather ? CollectiveKind::all_gather : CollectiveKind::all_to_all,
              .algorithm = AlgorithmKind::library,
              .part = RunPart::timed};
}
inline ScopedSpan attention_span(Comm& cp, CollectiveKind c, Pass pass) {
  const std::uint16_t label = cp.trace() ? cp.trace()->label("attention block", attention_block_role(c, pass)) : 0;
  return ScopedSpan(cp.trace(), cp.global_rank(), EventKind::compute, label);
}

}  // namespace dtl::cp
