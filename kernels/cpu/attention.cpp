// Causal attention on the CPU, in blocks of query rows (the fast path of
// transformer_kernels.h; its float64 twin is reference::attention_forward / _backward).
//
// The naive kernel computes all S×S scores of a head and masks half of them away. Here the
// scores come in blocks of kBlock query rows: block [i0, i0 + rows) can only see keys
// 0 … i0 + rows − 1, so its GEMMs stop there. The work is Σ over blocks of rows·(i0 + rows)
// instead of S·S: (S + kBlock)/(2S) of it, 0.625 at S = 256. The probabilities P are still
// written out (zeros past the diagonal): the GPT keeps them for its backward, and they are
// the 5·a·s/h term of the activation-memory formula (Korthikanti et al. 2022) that the
// recomputation lab measures. The softmax runs in SIMD lanes (vector_math.h).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "kernels/cpu/cpu_threads.h"
#include "kernels/cpu/transformer_kernels.h"
#include "kernels/cpu/vector_math.h"

namespace dtl::kernels {

namespace {

using detail::exp_nonpositive;
using detail::lane_max;
using detail::lane_sum;

// Query rows per block: large enough that each GEMM keeps OpenBLAS near its peak, small
// enough that little of the masked triangle is computed (measured at h 256, s 256: 64).
constexpr int kBlock = 64;

// Where one (b, head) of attention lives: row s of its Q is row s·B + b of qkv, so its
// leading dimension is B rows of qkv (B·3·H·d floats); likewise for the output.
struct HeadView {
  std::size_t q = 0, k = 0, v = 0, out = 0, probs = 0;
  int ld_qkv = 0, ld_out = 0;
};

HeadView head_view(const AttentionShape& s, int b, int h) {
  const std::size_t hd = std::size_t(s.heads) * std::size_t(s.head_dim);
  HeadView v;
  v.q = std::size_t(b) * 3 * hd + std::size_t(h) * std::size_t(s.head_dim);
  v.k = v.q + hd;
  v.v = v.q + 2 * hd;
  v.out = std::size_t(b) * hd + std::size_t(h) * std::size_t(s.head_dim);
  v.probs = (std::size_t(b) * std::size_t(s.heads) + std::size_t(h)) * std::size_t(s.seq) * std::size_t(s.seq);
  v.ld_qkv = int(std::size_t(s.batch) * 3 * hd);
  v.ld_out = int(std::size_t(s.batch) * hd);
  return v;
}

std::size_t at_row(int row, int ld) { return std::size_t(row) * std::size_t(ld); }

// Rows first_row … first_row + rows − 1 of P (each `seq` long, scores in place): row i
// becomes softmax over keys j <= i, zeros past the diagonal (the causal mask).
DTL_ELEMENTWISE_CLONES void causal_softmax_block(float* p, int first_row, int rows, int seq) {
  for (int r = 0; r < rows; ++r) {
    float* row = p + at_row(r, seq);
    const int n = first_row + r + 1;
    const float mx = lane_max(row, n);
    const float sum = lane_sum(n, [&](int j) { return row[j] = exp_nonpositive(row[j] - mx); });
    for (int j = 0; j < n; ++j) row[j] /= sum;
    std::fill(row + n, row + seq, 0.0f);
  }
}

// Softmax's backward on the same rows, dP in ds becoming dS in place, with the scores'
// 1/√d folded in: dS = P ∘ (dP − rowsum(dP ∘ P)) · scale. Keys past the diagonal (up to
// `keys`, the block's last key) get 0, so the key-block GEMMs can read whole blocks.
DTL_ELEMENTWISE_CLONES void softmax_backward_block(const float* p, float* ds, int first_row, int rows, int keys,
                                                   int seq, float scale) {
  for (int r = 0; r < rows; ++r) {
    const float* pr = p + at_row(r, seq);
    float* dr = ds + at_row(r, seq);
    const int n = first_row + r + 1;
    const float dot = lane_sum(n, [&](int j) { return dr[j] * pr[j]; });
    for (int j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - dot) * scale;
    std::fill(dr + n, dr + keys, 0.0f);
  }
}

// One (b, head): per query block, scores = Q·Kᵀ/√d over the keys it can see, softmax, P·V.
void head_forward(const float* qkv, float* out, float* p, const AttentionShape& s, const HeadView& v) {
  const float scale = 1.0f / std::sqrt(float(s.head_dim));
  for (int i0 = 0; i0 < s.seq; i0 += kBlock) {
    const int rows = std::min(kBlock, s.seq - i0), keys = i0 + rows;
    float* pb = p + at_row(i0, s.seq);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, s.head_dim, scale,
                qkv + v.q + at_row(i0, v.ld_qkv), v.ld_qkv, qkv + v.k, v.ld_qkv, 0.0f, pb, s.seq);
    causal_softmax_block(pb, i0, rows, s.seq);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, s.head_dim, keys, 1.0f, pb, s.seq, qkv + v.v, v.ld_qkv,
                0.0f, out + v.out + at_row(i0, v.ld_out), v.ld_out);
  }
}

// One (b, head), with ds an S×S scratch. Query blocks: dP = dout·Vᵀ, dS, dQ = dS·K (keys up
// to the block's last). Key blocks [j0, j0 + cols): only queries i >= j0 see them, so
// dV = Pᵀ·dout and dK = dSᵀ·Q read rows j0 … S − 1. Every dqkv element is written once.
void head_backward(const float* qkv, const float* p, const float* dout, float* dqkv, float* ds, const AttentionShape& s,
                   const HeadView& v) {
  const float scale = 1.0f / std::sqrt(float(s.head_dim));
  const int d = s.head_dim, ld = v.ld_qkv, ldo = v.ld_out;
  for (int i0 = 0; i0 < s.seq; i0 += kBlock) {
    const int rows = std::min(kBlock, s.seq - i0), keys = i0 + rows;
    float* dsb = ds + at_row(i0, s.seq);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, d, 1.0f, dout + v.out + at_row(i0, ldo), ldo,
                qkv + v.v, ld, 0.0f, dsb, s.seq);  // dP
    softmax_backward_block(p + at_row(i0, s.seq), dsb, i0, rows, keys, s.seq, scale);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, d, keys, 1.0f, dsb, s.seq, qkv + v.k, ld, 0.0f,
                dqkv + v.q + at_row(i0, ld), ld);  // dQ
  }
  for (int j0 = 0; j0 < s.seq; j0 += kBlock) {
    const int cols = std::min(kBlock, s.seq - j0), queries = s.seq - j0;
    const std::size_t corner = at_row(j0, s.seq) + std::size_t(j0);  // P[j0, j0], dS[j0, j0]
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cols, d, queries, 1.0f, p + corner, s.seq,
                dout + v.out + at_row(j0, ldo), ldo, 0.0f, dqkv + v.v + at_row(j0, ld), ld);  // dV
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cols, d, queries, 1.0f, ds + corner, s.seq,
                qkv + v.q + at_row(j0, ld), ld, 0.0f, dqkv + v.k + at_row(j0, ld), ld);  // dK
  }
}

// With several CPU threads the (batch, head) pairs are split between them.
void for_each_head(const AttentionShape& s, const std::function<void(const HeadView&, float*)>& head,
                   std::size_t scratch_floats) {
  const std::size_t pairs = std::size_t(s.batch) * std::size_t(s.heads);
  parallel_for(pairs, 1, [&](std::size_t first, std::size_t last) {
    std::vector<float> scratch(scratch_floats);
    for (std::size_t pair = first; pair < last; ++pair)
      head(head_view(s, int(pair) / s.heads, int(pair) % s.heads), scratch.data());
  });
}

}  // namespace

void attention_forward(const float* qkv, float* out, float* probs, const AttentionShape& s) {
  for_each_head(
      s, [&](const HeadView& v, float*) { head_forward(qkv, out, probs + v.probs, s, v); }, 0);
}

void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv, const AttentionShape& s) {
  const std::size_t ds_floats = std::size_t(s.seq) * std::size_t(s.seq);  // dP, then dS in place
  for_each_head(
      s, [&](const HeadView& v, float* ds) { head_backward(qkv, probs + v.probs, dout, dqkv, ds, s, v); }, ds_floats);
}

}  // namespace dtl::kernels
