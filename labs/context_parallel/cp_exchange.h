// Context-parallel attention over a Comm (issue 32): the P ranks of `cp` each hold n = S/P
// positions of every sequence (cp_partition.h) and together compute one layer's causal
// attention as if one rank held them all. Three ways to move what attention needs:
//
//   ring        (Ring Attention, Liu et al. 2023; Striped/zig-zag variants) each rank keeps
//               its queries; the K/V chunks travel around the ring, P−1 hops, the next hop
//               posted before the current block is computed so the transfer hides behind
//               it; the partials merge online (cp_attention.h). Backward: the K/V chunks go
//               around again and their dK/dV accumulators travel with them, one more hop at
//               the end bringing each home.
//   all_gather  (Llama 3, Dubey et al. 2024 §3.3.2) all-gather K and V, attend the local
//               queries to the whole sequence; backward reduce-scatters dK/dV to their owners.
//               The gathered K/V is kept from forward (S·B·2·A·d floats), not gathered again.
//   ulysses     (DeepSpeed-Ulysses, Jacobs et al. 2023) all-to-all from sequence-sharded to
//               head-sharded (A/P heads of the whole sequence; A divisible by P), ordinary
//               causal attention, all-to-all back. Forward: qkv (1) and the output (2);
//               backward: dout (3) and dqkv (4): four all-to-alls per layer.
//
// Layout (one rank): its n positions ascending (cp_positions), rows in [s, b] order over
// them, row i·B + b = position pos[i] of sequence b, as kernels/cpu/transformer_kernels.h:
//   qkv   [n·B × 3·A·d]  rows [Q of every head | K | V], the GPT's c_attn output rows
//   out   [n·B × A·d]    and dout the same;  dqkv as qkv
// A K/V chunk that travels is the [K | V] tail of each qkv row: [n·B × 2·A·d].
// Comm use: point-to-point for the ring (tags kRingTag*), the library's all_gather,
// reduce_scatter and all_to_all for the others, marked forward/backward (ScopedCollectiveRole).
#pragma once

#include <cstdint>
#include <vector>

#include "core/comm/comm.h"
#include "core/theory/context_parallel.h"
#include "kernels/cpu/transformer_kernels.h"
#include "labs/context_parallel/cp_attention.h"
#include "labs/context_parallel/cp_partition.h"

namespace dtl::cp {

// The algorithm is core/theory's CpAlgo (ring, all_gather, ulysses), the one `dtlab plan`'s
// --cp-algo names too, with its words ("ring", "all-gather", "ulysses") from cp_algo_name.
using theory::cp_algo_name;
using theory::CpAlgo;

// One attention layer: shape.seq is the WHOLE sequence S (each rank holds S/P of it).
struct CpLayer {
  kernels::AttentionShape shape;
  CpSplit split = CpSplit::contiguous;
  CpShape heads() const { return {shape.batch, shape.heads, shape.head_dim}; }
};

// Throws UsageError when `layer` cannot run with `algo` on `ranks` ranks: the split's
// divisibility (check_cp_split) and, for ulysses, heads divisible by the ranks.
void check_cp_layer(CpAlgo algo, const CpLayer& layer, int ranks);

// What forward keeps for backward (besides the caller's qkv).
struct CpSaved {
  std::vector<float> out;       // this rank's output rows [n·B × A·d]
  std::vector<float> lse;       // ring, all_gather: [n·B × A];  ulysses: [S·B × A/P], its heads
  std::vector<float> kv_all;    // all_gather: every rank's [K | V] rows, rank order [S·B × 2·A·d]
  std::vector<float> head_qkv;  // ulysses: its heads' qkv, rank order [S·B × 3·(A/P)·d]
  std::vector<float> head_out;  // ulysses: its heads' output [S·B × (A/P)·d]
};

// Forward: `qkv` this rank's rows (above); returns its output and what backward needs.
CpSaved cp_attention_forward(Comm& cp, CpAlgo algo, const CpLayer& layer, const float* qkv);
// Backward: dL/d(out) of this rank's rows → dL/d(qkv) of them [n·B × 3·A·d].
std::vector<float> cp_attention_backward(Comm& cp, CpAlgo algo, const CpLayer& layer, const float* qkv,
                                         const CpSaved& saved, const float* dout);

// The three algorithms one by one (what cp_attention_forward/backward call).
CpSaved ring_attention_forward(Comm& cp, const CpLayer& layer, const float* qkv);
std::vector<float> ring_attention_backward(Comm& cp, const CpLayer& layer, const float* qkv, const CpSaved& saved,
                                           const float* dout);
CpSaved all_gather_attention_forward(Comm& cp, const CpLayer& layer, const float* qkv);
std::vector<float> all_gather_attention_backward(Comm& cp, const CpLayer& layer, const float* qkv, const CpSaved& saved,
                                                 const float* dout);
CpSaved ulysses_attention_forward(Comm& cp, const CpLayer& layer, const float* qkv);
std::vector<float> ulysses_attention_backward(Comm& cp, const CpLayer& layer, const float* qkv, const CpSaved& saved,
                                              const float* dout);

// Message tags of the ring: forward K/V hop t is kRingTagKv + t, backward K/V hop t
// kRingTagKvBack + t, backward dK/dV hop t kRingTagDkv + t.
inline constexpr int kRingTagKv = 3200, kRingTagKvBack = 3300, kRingTagDkv = 3400;

// The bytes ONE rank sends to the other ranks for one layer (every rank sends the same).
// With n = S/P positions, B sequences, A heads of d, fp32 (4 B), a K/V chunk being
// n·B·2·A·d·4 bytes:
//   ring        forward  (P−1)·chunk                          P−1 hops of my K/V
//               backward (P−1)·chunk + P·chunk                K/V again, dK/dV P hops (0 at P = 1)
//   all_gather  forward  (P−1)·chunk                          my block reaches P−1 ranks
//               backward (P−1)·chunk                          reduce-scatter: P−1 blocks leave
//   ulysses     forward  (P−1)/P·n·B·(3 + 1)·A·d·4            qkv and out, a 1/P of each stays
//               backward (P−1)/P·n·B·(1 + 3)·A·d·4            dout and dqkv
// A library collective's "bytes sent" is the bandwidth-optimal algorithm's share: of its
// buffer of P blocks, the P−1 that leave the rank (what a ring all-gather / reduce-scatter
// or a pairwise all-to-all sends).
struct CpBytes {
  std::uint64_t forward = 0, backward = 0;
};
CpBytes cp_bytes_per_rank(CpAlgo algo, const CpLayer& layer, int ranks);

}  // namespace dtl::cp
