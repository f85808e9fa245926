// CPU kernels of the GPT (labs/train/gpt.h): LayerNorm, causal multi-head attention and
// the token embedding. LayerNorm and attention each have a float64 twin in namespace
// reference that the tests hold the fast path to (as kernels.h does for the MLP's kernels);
// the embedding only copies rows.
//
// Rows are tokens in Megatron's [s, b] order: row = s·B + b for sequence position s and
// batch element b, so a contiguous block of rows is a block of the sequence (what sequence
// parallelism cuts). One (b, head) of attention therefore reads every B-th row: the GEMMs
// take that stride as their leading dimension instead of copying the rows out.
#pragma once

#include <cstddef>
#include <vector>

namespace dtl::kernels {

// LayerNorm over `width` features of each row (Ba et al. 2016):
//   y = (x − μ)·rstd·w + b,   μ = mean(x),   rstd = 1/√(var(x) + eps)   (biased variance)
// mean and rstd ([rows]) are kept for the backward.
void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int rows,
                       int width, float eps);
// With x̂ = (x − μ)·rstd and g = dy·w:  dx += rstd·(g − mean(g) − x̂·mean(g·x̂)),
// dw += Σ_rows dy·x̂,  db += Σ_rows dy. Everything is ADDED: dx is the residual stream's
// gradient, dw and db accumulate over the rows (and over calls).
void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                        float* dx, float* dw, float* db, int rows, int width);

// The shape of one attention call: `seq` positions × `batch` sequences, `heads` heads of
// `head_dim` features. qkv rows are [Q of every head | K | V] (3·heads·head_dim floats),
// the output rows [heads·head_dim], probs [batch × heads × seq × seq] (softmax rows).
struct AttentionShape {
  int seq = 0, batch = 0, heads = 0, head_dim = 0;
};

// Causal scaled dot-product attention (Vaswani et al. 2017), per (b, head):
//   P = softmax(Q·Kᵀ/√d + mask),  out = P·V   (mask: −∞ where key position > query position)
void attention_forward(const float* qkv, float* out, float* probs, const AttentionShape& s);
// dP = dout·Vᵀ,  dV = Pᵀ·dout,  dS = P ∘ (dP − rowsum(dP ∘ P)),  dQ = dS·K/√d,  dK = dSᵀ·Q/√d.
// dqkv is overwritten (same layout as qkv).
void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv, const AttentionShape& s);

// Vocab-parallel token embedding: this rank holds rows [vocab_begin, vocab_begin + vocab_local)
// of the table [V × width]. out row i = table[tokens[i]] when owned here, else zeros (the
// tensor-parallel sum over ranks gives every row once).
void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* out, int rows,
                       int width);
// dtable[tokens[i] − vocab_begin] += dout row i for the owned tokens (scatter-add).
void embedding_backward(const int* tokens, const float* dout, float* dtable, int vocab_begin, int vocab_local, int rows,
                        int width);
// The rows 0..rows-1 stably sorted by token: equal tokens side by side, in row order. The
// GPU's embedding backward walks it to add each token's rows in this loop's order.
std::vector<int> rows_by_token(const int* tokens, int rows);

// Learned positions over rows laid out [s][b]: row j holds position j / rows_per_position
// (rows_per_position = B sequences). Forward x[j] += table[j / B]; backward
// dtable[p] += Σ of the B rows of position p. `table` starts at the first row's position.
void position_forward(const float* table, float* x, int rows, int width, int rows_per_position);
void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position);

namespace reference {
void layernorm_forward(const float* x, const float* w, const float* b, float* y, int rows, int width, float eps);
void layernorm_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db, int rows,
                        int width, float eps);
void attention_forward(const float* qkv, float* out, const AttentionShape& s);
// Central differences in float64 for every `every`-th element of dqkv (the others are left
// as they are): a test can sample a long sequence without paying for every element.
void attention_backward(const float* qkv, const float* dout, float* dqkv, const AttentionShape& s, int every = 1);
}  // namespace reference

}  // namespace dtl::kernels
