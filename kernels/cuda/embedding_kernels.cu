// The GPT's embedding and position kernels (kernels/cuda/kernels.h), the twins of
// kernels/cpu/transformer_kernels. Same arguments, layouts and rules as the CPU versions:
//   embedding_forward    writes out (zeros for tokens another rank owns)
//   embedding_backward   ADDS to dtable
//   position_forward     ADDS the position table to x
//   position_backward    ADDS to dtable, rows in the CPU's order
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"

namespace dtl::cuda {

namespace {

// ---- embedding ----------------------------------------------------------------------

__global__ void embedding_forward_kernel(const int* tokens, const float* table, int vocab_begin, int vocab_local,
                                         float* out, int rows, int width) {
  const std::size_t n = std::size_t(rows) * std::size_t(width);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = i / std::size_t(width), c = i % std::size_t(width);
    const int local = tokens[r] - vocab_begin;
    out[i] = local >= 0 && local < vocab_local ? table[std::size_t(local) * std::size_t(width) + c] : 0.0f;
  }
}

// Deterministic scatter-add, no atomics: rows_by_token lists the rows stably sorted by
// token (kernels::rows_by_token), so equal tokens form runs. One thread per (k, c) where k
// starts a run adds that token's rows in ascending row order — the CPU loop's order — so
// dtable gets the CPU's bits, the same in every run. (atomicAdd would sum repeated tokens
// in whichever order threads ran: gradients that differ in their low bits from run to run,
// which a recomputation-versus-keep-all bit check cannot tell from a bug.)
__global__ void embedding_backward_kernel(const int* tokens, const int* rows_by_token, const float* dout, float* dtable,
                                          int vocab_begin, int vocab_local, int rows, int width) {
  const std::size_t n = std::size_t(rows) * std::size_t(width);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const int k = int(i / std::size_t(width));
    const std::size_t c = i % std::size_t(width);
    const int token = tokens[rows_by_token[k]];
    if (k > 0 && tokens[rows_by_token[k - 1]] == token) continue;  // not the start of its run
    const int local = token - vocab_begin;
    if (local < 0 || local >= vocab_local) continue;
    float* t = dtable + std::size_t(local) * std::size_t(width) + c;
    float sum = *t;
    for (int j = k; j < rows && tokens[rows_by_token[j]] == token; ++j)
      sum += dout[std::size_t(rows_by_token[j]) * std::size_t(width) + c];
    *t = sum;
  }
}

// x[j][c] += table[j / rows_per_position][c]
__global__ void position_forward_kernel(const float* table, float* x, int rows, int width, int rows_per_position) {
  const std::size_t n = std::size_t(rows) * std::size_t(width);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t row = i / std::size_t(width), col = i % std::size_t(width);
    x[i] += table[(row / std::size_t(rows_per_position)) * std::size_t(width) + col];
  }
}

// dtable[p][c] += dx[p·B][c] + dx[p·B + 1][c] + ..., one thread per (p, c), rows in order
// (the CPU's order, so both give the same bits).
__global__ void position_backward_kernel(const float* dx, float* dtable, int positions, int rows, int width,
                                         int rows_per_position) {
  const std::size_t n = std::size_t(positions) * std::size_t(width);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const int p = int(i / std::size_t(width)), col = int(i % std::size_t(width));
    float s = dtable[i];
    for (int r = p * rows_per_position; r < min(rows, (p + 1) * rows_per_position); ++r)
      s += dx[std::size_t(r) * std::size_t(width) + std::size_t(col)];
    dtable[i] = s;
  }
}

}  // namespace

void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* out, int rows,
                       int width, cudaStream_t s) {
  const std::size_t n = std::size_t(rows > 0 ? rows : 0) * std::size_t(width > 0 ? width : 0);
  if (n) DTL_LAUNCH(embedding_forward_kernel, n, s, tokens, table, vocab_begin, vocab_local, out, rows, width);
}

void position_forward(const float* table, float* x, int rows, int width, int rows_per_position, cudaStream_t s) {
  const std::size_t n = std::size_t(rows > 0 ? rows : 0) * std::size_t(width > 0 ? width : 0);
  if (n) DTL_LAUNCH(position_forward_kernel, n, s, table, x, rows, width, rows_per_position);
}

void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position, cudaStream_t s) {
  if (rows <= 0 || width <= 0) return;
  const int positions = (rows + rows_per_position - 1) / rows_per_position;
  const std::size_t n = std::size_t(positions) * std::size_t(width);
  DTL_LAUNCH(position_backward_kernel, n, s, dx, dtable, positions, rows, width, rows_per_position);
}

void embedding_backward(const int* tokens, const int* rows_by_token, const float* dout, float* dtable, int vocab_begin,
                        int vocab_local, int rows, int width, cudaStream_t s) {
  const std::size_t n = std::size_t(rows > 0 ? rows : 0) * std::size_t(width > 0 ? width : 0);
  if (n)
    DTL_LAUNCH(embedding_backward_kernel, n, s, tokens, rows_by_token, dout, dtable, vocab_begin, vocab_local, rows,
               width);
}

}  // namespace dtl::cuda
