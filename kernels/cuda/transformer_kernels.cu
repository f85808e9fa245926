// The GPT's CUDA kernels (kernels/cuda/kernels.h), the twins of kernels/cpu/transformer_kernels.
// Same arguments, same layouts, same accumulate-or-overwrite rules as the CPU versions:
//   layernorm_forward    writes y, mean, rstd
//   layernorm_backward   ADDS to dx, dw and db (dx is the residual stream's gradient)
//   attention_forward    writes out and probs
//   attention_backward   OVERWRITES dqkv
// (the embedding and position kernels: embedding_kernels.cu)
#include <cmath>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"

namespace dtl::cuda {

namespace {

constexpr unsigned kFull = 0xffffffffu;

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}

// The sum of v over the block, returned to every thread. blockDim.x is a multiple of 32
// (at most 1024); `shared` holds 32 floats. The first barrier lets the block call it
// again with the same `shared` (a fast warp must not overwrite partials still being read).
__device__ float block_sum(float v, float* shared) {
  v = warp_sum(v);
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const unsigned warps = (blockDim.x + 31u) >> 5;
  return warp_sum(lane < warps ? shared[lane] : 0.0f);
}

// ---- LayerNorm ----------------------------------------------------------------------

constexpr int kRowThreads = 256;  // one block of 8 warps per row

// One block per row: μ, then Σ(x − μ)² in a second pass (as the CPU: no Σx² − nμ²
// cancellation), then y. The row is read three times from global memory (L1/L2 hits).
__global__ void layernorm_forward_kernel(const float* x, const float* w, const float* b, float* y, float* mean,
                                         float* rstd, int width, float eps) {
  __shared__ float shared[32];
  const std::size_t row = blockIdx.x;
  const float* xr = x + row * std::size_t(width);
  float* yr = y + row * std::size_t(width);
  float s = 0;
  for (int i = threadIdx.x; i < width; i += blockDim.x) s += xr[i];
  const float mu = block_sum(s, shared) / float(width);
  float v = 0;
  for (int i = threadIdx.x; i < width; i += blockDim.x) v += (xr[i] - mu) * (xr[i] - mu);
  const float rs = 1.0f / sqrtf(block_sum(v, shared) / float(width) + eps);
  for (int i = threadIdx.x; i < width; i += blockDim.x) yr[i] = (xr[i] - mu) * rs * w[i] + b[i];
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// dx += rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·w: one block per row.
__global__ void layernorm_backward_dx_kernel(const float* x, const float* w, const float* mean, const float* rstd,
                                             const float* dy, float* dx, int width) {
  __shared__ float shared[32];
  const std::size_t row = blockIdx.x;
  const float* xr = x + row * std::size_t(width);
  const float* dyr = dy + row * std::size_t(width);
  float* dxr = dx + row * std::size_t(width);
  const float mu = mean[row], rs = rstd[row];
  float sg = 0, sgx = 0;
  for (int i = threadIdx.x; i < width; i += blockDim.x) {
    const float g = dyr[i] * w[i];
    sg += g;
    sgx += g * ((xr[i] - mu) * rs);
  }
  const float mean_g = block_sum(sg, shared) / float(width);
  const float mean_gx = block_sum(sgx, shared) / float(width);
  for (int i = threadIdx.x; i < width; i += blockDim.x) {
    const float xhat = (xr[i] - mu) * rs;
    dxr[i] += rs * (dyr[i] * w[i] - mean_g - xhat * mean_gx);
  }
}

// dw[i] += Σ_rows dy·x̂,  db[i] += Σ_rows dy, in two stages so every SM has work (a
// 768-wide LayerNorm has only 24 column tiles): block (x, y) sums the rows of chunk y for
// 32 columns — threadIdx.x a column (a warp reads 32 consecutive floats of a row),
// threadIdx.y every 8th row, the 8 partial sums meeting in shared memory — into
// partial[y][col]; then one thread per column adds the chunks in order. No atomics:
// deterministic.
constexpr int kColTile = 32, kRowSplit = 8, kRowsPerChunk = 64;

__global__ void layernorm_dwdb_partial_kernel(const float* x, const float* mean, const float* rstd, const float* dy,
                                              float* pw, float* pb, int rows, int width) {
  __shared__ float sw[kRowSplit][kColTile + 1], sb[kRowSplit][kColTile + 1];
  const int col = blockIdx.x * kColTile + threadIdx.x;
  const int first = blockIdx.y * kRowsPerChunk, last = min(rows, first + kRowsPerChunk);
  float aw = 0, ab = 0;
  if (col < width)
    for (int r = first + int(threadIdx.y); r < last; r += kRowSplit) {
      const std::size_t at = std::size_t(r) * std::size_t(width) + std::size_t(col);
      aw += dy[at] * ((x[at] - mean[r]) * rstd[r]);
      ab += dy[at];
    }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y != 0 || col >= width) return;
  float tw = 0, tb = 0;
  for (int k = 0; k < kRowSplit; ++k) {
    tw += sw[k][threadIdx.x];
    tb += sb[k][threadIdx.x];
  }
  pw[std::size_t(blockIdx.y) * width + col] = tw;
  pb[std::size_t(blockIdx.y) * width + col] = tb;
}

// out[c] += Σ_k partial[k][c] over the chunks, in chunk order.
__global__ void add_partial_columns_kernel(const float* partial, float* out, int chunks, int width) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= width) return;
  float s = 0;
  for (int k = 0; k < chunks; ++k) s += partial[std::size_t(k) * width + c];
  out[c] += s;
}

// ---- attention ----------------------------------------------------------------------

constexpr int kSoftmaxWarps = 8;  // rows per block: one warp per S-long row

// probs holds `rows` rows of length `seq` (every (b, head)'s S×S scores, row-major, already
// scaled by 1/√d by the GEMM's alpha, as the CPU does); row r is query position i = r % seq.
// softmax over keys j <= i, zeros past the diagonal (the causal mask).
__global__ void causal_softmax_kernel(float* probs, std::size_t rows, int seq) {
  const std::size_t r = std::size_t(blockIdx.x) * kSoftmaxWarps + (threadIdx.x >> 5);
  if (r >= rows) return;  // a whole warp leaves together: the shuffles below see full warps
  const int lane = int(threadIdx.x & 31u), i = int(r % std::size_t(seq));
  float* row = probs + r * std::size_t(seq);
  float mx = -INFINITY;
  for (int j = lane; j <= i; j += 32) mx = fmaxf(mx, row[j]);
  mx = warp_max(mx);
  float sum = 0;
  for (int j = lane; j <= i; j += 32) {
    const float e = expf(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  for (int j = lane; j < seq; j += 32) row[j] = j <= i ? row[j] / sum : 0.0f;
}

// Softmax's backward in place over dS (holding dP), with the 1/√d of the scores folded in:
//   dS[i][j] = P[i][j]·(dP[i][j] − Σ_{k<=i} dP[i][k]·P[i][k])·scale   (P is 0 past the diagonal)
// ds and probs: `rows` rows of length seq, row r is query position r % seq.
__global__ void causal_softmax_backward_kernel(const float* probs, float* ds, std::size_t rows, int seq, float scale) {
  const std::size_t r = std::size_t(blockIdx.x) * kSoftmaxWarps + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int lane = int(threadIdx.x & 31u), i = int(r % std::size_t(seq));
  const float* pr = probs + r * std::size_t(seq);
  float* dr = ds + r * std::size_t(seq);
  float dot = 0;
  for (int j = lane; j <= i; j += 32) dot += dr[j] * pr[j];
  dot = warp_sum(dot);
  for (int j = lane; j < seq; j += 32) dr[j] = pr[j] * (dr[j] - dot) * scale;
}

void launch_softmax_rows(float* probs, std::size_t rows, int seq, cudaStream_t s) {
  const std::size_t blocks = (rows + kSoftmaxWarps - 1) / kSoftmaxWarps;
  causal_softmax_kernel<<<unsigned(blocks), kSoftmaxWarps * 32, 0, s>>>(probs, rows, seq);
  DTL_CUDA_CHECK(cudaGetLastError());
}

// How the (b, head) pairs are batched for cublasSgemmStridedBatched: `inner` pairs per call
// at constant strides, `outer` calls. Pair (b, h) starts at
//   qkv   b·3Hd + h·d      (then row s at + s·ld_qkv,  ld_qkv = B·3Hd)
//   out   b·Hd  + h·d      (then row s at + s·ld_out,  ld_out = B·Hd)
//   probs (b·H + h)·S²
// Batching over heads (one call per b) has strides d, d, S²; batching over the batch (one
// call per head) 3Hd, Hd, H·S². The larger of B and H goes inside: fewer calls.
struct Batching {
  int outer = 0, inner = 0;
  long long stride_qkv = 0, stride_out = 0, stride_probs = 0;  // between inner pairs
  std::size_t base_qkv(int o) const { return heads_inside ? std::size_t(o) * three_hd : std::size_t(o) * d; }
  std::size_t base_out(int o) const { return heads_inside ? std::size_t(o) * hd : std::size_t(o) * d; }
  std::size_t base_probs(int o) const {
    return heads_inside ? std::size_t(o) * std::size_t(inner) * s2 : std::size_t(o) * s2;
  }
  bool heads_inside = true;
  std::size_t d = 0, hd = 0, three_hd = 0, s2 = 0;
};

Batching batching(const kernels::AttentionShape& s) {
  Batching b;
  b.d = std::size_t(s.head_dim);
  b.hd = std::size_t(s.heads) * b.d;
  b.three_hd = 3 * b.hd;
  b.s2 = std::size_t(s.seq) * std::size_t(s.seq);
  b.heads_inside = s.heads >= s.batch;
  if (b.heads_inside) {  // call o = batch element b, pairs h = 0..H-1
    b.outer = s.batch;
    b.inner = s.heads;
    b.stride_qkv = (long long)b.d;
    b.stride_out = (long long)b.d;
    b.stride_probs = (long long)b.s2;
  } else {  // call o = head h, pairs b = 0..B-1
    b.outer = s.heads;
    b.inner = s.batch;
    b.stride_qkv = (long long)b.three_hd;
    b.stride_out = (long long)b.hd;
    b.stride_probs = (long long)(std::size_t(s.heads) * b.s2);
  }
  return b;
}

// The shared pattern of the GEMMs below, row-major on the left, cuBLAS (column-major) on
// the right. A row-major [r × c] matrix with leading dimension ld is, to cuBLAS, the
// column-major [c × r] matrix (its transpose) with the same ld. So for one (b, head), with
// Q, K, V, dout, dQ, dK, dV [S × d] (ld_qkv or ld_out) and P, dS [S × S] (ld S):
//
//   scores  P = α·Q·Kᵀ     ⇔  Pᵀ(S×S)  = op_T(K)(S×d) · Q(d×S)       Sgemm(T, N, S, S, d, α, K, Q, P)
//   out     O = P·V        ⇔  Oᵀ(d×S)  = V(d×S) · P(S×S)             Sgemm(N, N, d, S, S, 1, V, P, O)
//   dP      = dout·Vᵀ      ⇔  dPᵀ      = op_T(V) · dout              Sgemm(T, N, S, S, d, 1, V, dout, dP)
//   dV      = Pᵀ·dout      ⇔  dVᵀ(d×S) = dout(d×S) · op_T(P)(S×S)    Sgemm(N, T, d, S, S, 1, dout, P, dV)
//   dQ      = dS·K         ⇔  dQᵀ      = K · dS                      Sgemm(N, N, d, S, S, 1, K, dS, dQ)
//   dK      = dSᵀ·Q        ⇔  dKᵀ      = Q · op_T(dS)                Sgemm(N, T, d, S, S, 1, Q, dS, dK)
//
// (each cuBLAS operand written as the column-major matrix it sees: "K(d×S)" is Kᵀ, and
// op_T of it is K). Check of the first: C(i, j) = Σ_c K[i][c]·Q[j][c] sits at i + j·S,
// which row-major is P[j][i] = Q_j·K_i. Of dV: C(c, i) = Σ_j dout[j][c]·P[j][i] at
// c + i·ld_qkv, row-major dV[i][c] = (Pᵀ·dout)[i][c]. The masked entries of P (and so of
// dS) are zeros, so the full S-long products equal the causal ones, as on the CPU.
void gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                  const float* A, int lda, long long stride_a, const float* B, int ldb, long long stride_b, float* C,
                  int ldc, long long stride_c, int count) {
  const float beta = 0.0f;
  DTL_CUBLAS_CHECK(cublasSgemmStridedBatched(h, ta, tb, m, n, k, &alpha, A, lda, stride_a, B, ldb, stride_b, &beta, C,
                                             ldc, stride_c, count));
}

}  // namespace

void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int rows,
                       int width, float eps, cudaStream_t s) {
  if (rows <= 0 || width <= 0) return;
  layernorm_forward_kernel<<<unsigned(rows), kRowThreads, 0, s>>>(x, w, b, y, mean, rstd, width, eps);
  DTL_CUDA_CHECK(cudaGetLastError());
}

void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                        float* dx, float* dw, float* db, int rows, int width, cudaStream_t s) {
  if (rows <= 0 || width <= 0) return;
  layernorm_backward_dx_kernel<<<unsigned(rows), kRowThreads, 0, s>>>(x, w, mean, rstd, dy, dx, width);
  DTL_CUDA_CHECK(cudaGetLastError());
  const int chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  float* partial = nullptr;  // [2][chunks][width]: dw's, then db's
  DTL_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&partial), 2 * std::size_t(chunks) * width * sizeof(float), s));
  float* pb = partial + std::size_t(chunks) * width;
  const dim3 block(kColTile, kRowSplit), grid(unsigned((width + kColTile - 1) / kColTile), unsigned(chunks));
  layernorm_dwdb_partial_kernel<<<grid, block, 0, s>>>(x, mean, rstd, dy, partial, pb, rows, width);
  DTL_CUDA_CHECK(cudaGetLastError());
  const unsigned col_blocks = unsigned((width + kThreads - 1) / kThreads);
  add_partial_columns_kernel<<<col_blocks, kThreads, 0, s>>>(partial, dw, chunks, width);
  add_partial_columns_kernel<<<col_blocks, kThreads, 0, s>>>(pb, db, chunks, width);
  DTL_CUDA_CHECK(cudaGetLastError());
  DTL_CUDA_CHECK(cudaFreeAsync(partial, s));
}

std::size_t attention_backward_scratch_floats(const kernels::AttentionShape& s) {
  const std::size_t inner = std::size_t(s.heads >= s.batch ? s.heads : s.batch);
  return inner * std::size_t(s.seq) * std::size_t(s.seq);
}

void attention_forward(cublasHandle_t h, const float* qkv, float* out, float* probs, const kernels::AttentionShape& s,
                       cudaStream_t stream) {
  if (s.seq <= 0 || s.batch <= 0 || s.heads <= 0 || s.head_dim <= 0) return;
  DTL_CUBLAS_CHECK(cublasSetStream(h, stream));
  const Batching bt = batching(s);
  const int S = s.seq, d = s.head_dim;
  const int ld_qkv = int(std::size_t(s.batch) * bt.three_hd), ld_out = int(std::size_t(s.batch) * bt.hd);
  const float scale = 1.0f / std::sqrt(float(d));
  for (int o = 0; o < bt.outer; ++o) {  // P = scale·Q·Kᵀ (see the table above gemm_batched)
    const float* q = qkv + bt.base_qkv(o);
    gemm_batched(h, CUBLAS_OP_T, CUBLAS_OP_N, S, S, d, scale, q + bt.hd, ld_qkv, bt.stride_qkv, q, ld_qkv,
                 bt.stride_qkv, probs + bt.base_probs(o), S, bt.stride_probs, bt.inner);
  }
  launch_softmax_rows(probs, std::size_t(s.batch) * std::size_t(s.heads) * std::size_t(S), S, stream);
  for (int o = 0; o < bt.outer; ++o) {  // out = P·V
    const float* v = qkv + bt.base_qkv(o) + 2 * bt.hd;
    gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_N, d, S, S, 1.0f, v, ld_qkv, bt.stride_qkv, probs + bt.base_probs(o), S,
                 bt.stride_probs, out + bt.base_out(o), ld_out, bt.stride_out, bt.inner);
  }
}

void attention_backward(cublasHandle_t h, const float* qkv, const float* probs, const float* dout, float* dqkv,
                        float* scratch, const kernels::AttentionShape& s, cudaStream_t stream) {
  if (s.seq <= 0 || s.batch <= 0 || s.heads <= 0 || s.head_dim <= 0) return;
  DTL_CUBLAS_CHECK(cublasSetStream(h, stream));
  const Batching bt = batching(s);
  const int S = s.seq, d = s.head_dim;
  const int ld_qkv = int(std::size_t(s.batch) * bt.three_hd), ld_out = int(std::size_t(s.batch) * bt.hd);
  const float scale = 1.0f / std::sqrt(float(d));
  // scratch holds dP then dS of one call's `inner` pairs, contiguous (stride S²); the
  // stream orders the calls, so the next `o` overwrites it only after this one has read it.
  const long long s2 = (long long)bt.s2;
  for (int o = 0; o < bt.outer; ++o) {
    const float* q = qkv + bt.base_qkv(o);
    const float* k = q + bt.hd;
    const float* v = q + 2 * bt.hd;
    float* dq = dqkv + bt.base_qkv(o);
    float* dk = dq + bt.hd;
    float* dv = dq + 2 * bt.hd;
    const float* p = probs + bt.base_probs(o);
    const float* dy = dout + bt.base_out(o);
    // dP = dout·Vᵀ
    gemm_batched(h, CUBLAS_OP_T, CUBLAS_OP_N, S, S, d, 1.0f, v, ld_qkv, bt.stride_qkv, dy, ld_out, bt.stride_out,
                 scratch, S, s2, bt.inner);
    // dV = Pᵀ·dout
    gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_T, d, S, S, 1.0f, dy, ld_out, bt.stride_out, p, S, bt.stride_probs, dv,
                 ld_qkv, bt.stride_qkv, bt.inner);
    // dS = P ∘ (dP − rowsum(dP ∘ P))·scale, in place. The pairs of this call sit at
    // stride_probs in probs but at S² in scratch: when that is not contiguous in probs
    // (batching over b, H > 1), one launch per pair.
    const std::size_t rows_per_pair = std::size_t(S);
    if (bt.stride_probs == s2) {
      const std::size_t rows = std::size_t(bt.inner) * rows_per_pair;
      causal_softmax_backward_kernel<<<unsigned((rows + kSoftmaxWarps - 1) / kSoftmaxWarps), kSoftmaxWarps * 32, 0,
                                       stream>>>(p, scratch, rows, S, scale);
      DTL_CUDA_CHECK(cudaGetLastError());
    } else {
      for (int i = 0; i < bt.inner; ++i) {
        causal_softmax_backward_kernel<<<unsigned((rows_per_pair + kSoftmaxWarps - 1) / kSoftmaxWarps),
                                         kSoftmaxWarps * 32, 0, stream>>>(
            p + std::size_t(i) * std::size_t(bt.stride_probs), scratch + std::size_t(i) * bt.s2, rows_per_pair, S,
            scale);
        DTL_CUDA_CHECK(cudaGetLastError());
      }
    }
    // dQ = dS·K
    gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_N, d, S, S, 1.0f, k, ld_qkv, bt.stride_qkv, scratch, S, s2, dq, ld_qkv,
                 bt.stride_qkv, bt.inner);
    // dK = dSᵀ·Q
    gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_T, d, S, S, 1.0f, q, ld_qkv, bt.stride_qkv, scratch, S, s2, dk, ld_qkv,
                 bt.stride_qkv, bt.inner);
  }
}

}  // namespace dtl::cuda
