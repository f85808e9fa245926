// Blockwise causal attention: the arithmetic every context-parallel algorithm (cp_exchange.h)
// is built from. A rank holds some positions' queries and sees the keys and values a block
// at a time, in whatever order they reach it; the online softmax (Milakov & Gimelshein
// 2018, "Online normalizer calculation for softmax"; FlashAttention, Dao et al. 2022) lets
// it fold each block in without ever holding a whole row of scores.
//
// Per (sequence b, head h), a query q at global position p and a block of keys/values:
//   s_j = q·k_j / √d                for the keys with position ≤ p (the causal mask; the
//                                    others are left out, never set to −∞ and exponentiated)
//   m = max_j s_j,  l = Σ_j exp(s_j − m),  o = Σ_j exp(s_j − m)·v_j      the partial result
// Two partials of the same query merge exactly (the online-softmax rule):
//   m = max(m₁, m₂),  l = e^{m₁−m}·l₁ + e^{m₂−m}·l₂,  o = e^{m₁−m}·o₁ + e^{m₂−m}·o₂
// and finalize gives out = o / l and the log-sum-exp LSE = m + log l. A block whose keys
// are all after the query is empty: m = −∞, l = 0, o = 0, and merging it changes nothing
// (its weight e^{−∞} is taken as 0 explicitly, so no NaN can appear).
//
// Backward (FlashAttention-2, Dao 2023, Algorithm 2), from the final out, LSE and dout:
//   D = rowsum(dout ∘ out)                                   once per query row and head
//   P_j = exp(s_j − LSE)                                     the softmax, recomputed per block
//   dV_j += P_j·dout,  dP_j = dout·V_jᵀ,  dS_j = P_j·(dP_j − D)
//   dQ += Σ_j dS_j·k_j / √d,  dK_j += dS_j·q / √d
// Every block's contributions add up, so the blocks may run in any order and on any rank.
//
// Layout: rows in Megatron's [s, b] order as kernels/cpu/transformer_kernels.h has them,
// but s counts the block's own positions: row i·B + b holds the i-th position of the block
// (global position pos[i]) of sequence b. A row holds every head, head h's d features at
// h·d; a CpRows view adds a row stride, so Q, K and V can be read in place from the GPT's
// qkv rows [Q | K | V] (stride 3·A·d) or from a K/V chunk [K | V] (stride 2·A·d). The
// positions need not be ascending or contiguous (a zig-zag chunk, a gathered sequence).
// Per-(row, head) values (m, l, LSE, D) are [rows × A]: index (i·B + b)·A + h.
// Data fp32; the sums run in fp32 as a GPU kernel's would.
#pragma once

#include <vector>

namespace dtl::cp {

// The sizes every block shares: B sequences, A heads of d features.
struct CpShape {
  int batch = 1, heads = 1, head_dim = 1;
  int width() const { return heads * head_dim; }  // floats of one head-concatenated row, A·d
};

// A block of rows, read in place: row i·B + b starts at data + (i·B + b)·stride and holds
// global position pos[i] of sequence b; head h's features start at h·d in it.
struct CpRows {
  const float* data = nullptr;
  int stride = 0;
  const int* pos = nullptr;  // n global positions
  int n = 0;
};

// A query block's unnormalized result so far: o [n·B × A·d], m and l [n·B × A].
struct CpPartial {
  std::vector<float> o, m, l;
};

// Nothing seen yet: o = 0, m = −∞, l = 0 (the identity of merge_partial).
CpPartial empty_partial(const CpShape& s, int n);
// The partial result of query block q against one key/value block (k and v: the same
// positions). Pairs with key position > query position are skipped.
CpPartial block_forward(const CpShape& s, const CpRows& q, const CpRows& k, const CpRows& v);
// acc ← acc ⊕ other, the online-softmax merge (above). Order does not matter.
void merge_partial(CpPartial& acc, const CpPartial& other, const CpShape& s);

// The learner's merge checked where a run may never take it (issue 50: a merge that gave NaN
// for two empty sides passed the lab, whose runs never merge two empty ones): crafted partials
// (both sides empty, one empty, scores of ±300) against a float64 softmax over both key sets.
// The largest error of o/l (o and l themselves for two empty sides); +∞ for a NaN.
double merge_error_on_crafted_partials();
// out = o / l (rows `out_stride` floats apart), lse = m + log l [n·B × A]. A row that saw no
// key at all (impossible once its own position was seen) gets out = 0, lse = −∞.
void finalize_partial(const CpPartial& p, const CpShape& s, float* out, int out_stride, float* lse);

// D = rowsum(dout ∘ out) per row and head, [n·B × A].
std::vector<float> softmax_delta(const CpShape& s, int n, const float* out, int out_stride, const float* dout,
                                 int dout_stride);

// What the query side of a block's backward reads (its final results) and adds to (dq).
struct CpQueryGrad {
  const float* dout = nullptr;  // [n·B × A·d], rows dout_stride apart
  int dout_stride = 0;
  const float* lse = nullptr;    // [n·B × A], finalize_partial's
  const float* delta = nullptr;  // [n·B × A], softmax_delta's
  float* dq = nullptr;           // added to, rows dq_stride apart
  int dq_stride = 0;
};
// Where the key side adds its gradients: dk and dv rows `stride` apart (a [dK | dV] chunk, or
// the dqkv rows' K and V parts).
struct CpKeyGrad {
  float* dk = nullptr;
  float* dv = nullptr;
  int stride = 0;
};
// Adds the block's dQ, dK, dV (above). Skips the masked pairs, so a block wholly after the
// queries adds nothing.
void block_backward(const CpShape& s, const CpRows& q, const CpRows& k, const CpRows& v, const CpQueryGrad& g,
                    const CpKeyGrad& kg);

}  // namespace dtl::cp
