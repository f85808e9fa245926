#include "kernels/cpu/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_threads.h"
#include "kernels/cpu/vector_math.h"

namespace dtl::kernels {

namespace {
using detail::fast_tanh;
// Rows per part when a GEMM is split over the CPU threads: a multiple of OpenBLAS's row
// tiles (12 and 16 on Haswell, 4 to 32 elsewhere), so no tile is cut in two; split there,
// its results equal one call's on the kernels measured, but for small parts (cpu_threads.h).
constexpr std::size_t kGemmGrain = 96;
constexpr float kGeluC = 0.7978845608028654f;  // √(2/π)
}  // namespace

void use_one_blas_thread() { use_cpu_threads(1); }

std::string blas_kernels() {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  return std::string("OpenBLAS ") + openblas_get_corename() +
         (forced && *forced ? std::string(" (OPENBLAS_CORETYPE=") + forced + " in the environment)" : std::string());
}

// With several CPU threads (cpu_threads.h) each GEMM is split by its output's rows: the
// parts are GEMMs of the same kind, each element summed over the same K in the same order.
void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O) {
  parallel_for(std::size_t(B), kGemmGrain, [&](std::size_t first, std::size_t last) {
    float* Yp = Y + first * std::size_t(O);
    if (b)
      for (std::size_t r = first; r < last; ++r) std::copy(b, b + O, Y + r * std::size_t(O));  // Y = b, += X·Wᵀ
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(last - first), O, I, 1.0f, X + first * std::size_t(I), I,
                W, I, b ? 1.0f : 0.0f, Yp, O);
  });
}

void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                     int O, bool accumulate) {
  if (dX)  // dX = dY·W, by rows of dX (samples)
    parallel_for(std::size_t(B), kGemmGrain, [&](std::size_t first, std::size_t last) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(last - first), I, O, 1.0f, dY + first * std::size_t(O),
                  O, W, I, 0.0f, dX + first * std::size_t(I), I);
    });
  if (!dW) return;  // the input gradient only (zero-bubble's B); the weight part runs later (W)
  // dW = dYᵀ·X and db = Σ_rows dY, by rows of dW (output features o); each db[o] sums the
  // rows in row order, in a copy local to the part (two parts adding every row into one
  // cache line at their boundary would pass it to and fro: transformer_kernels.cpp).
  parallel_for(std::size_t(O), kGemmGrain, [&](std::size_t first, std::size_t last) {
    const int outs = int(last - first);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, outs, I, B, 1.0f, dY + first, O, X, I,
                accumulate ? 1.0f : 0.0f, dW + first * std::size_t(I), I);
    if (!db) return;  // a layer without a bias
    std::vector<float> part(std::size_t(outs), 0.0f);
    if (accumulate) std::copy(db + first, db + last, part.begin());
    for (int r = 0; r < B; ++r) {
      const float* row = dY + std::size_t(r) * std::size_t(O) + first;
      for (int o = 0; o < outs; ++o) part[std::size_t(o)] += row[o];
    }
    std::copy(part.begin(), part.end(), db + first);
  });
}

namespace {

inline float gelu(float v) { return 0.5f * v * (1.0f + fast_tanh(kGeluC * (v + 0.044715f * v * v * v))); }

DTL_ELEMENTWISE_CLONES void gelu_forward_part(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = gelu(x[i]);
}

// Rows of the GEMM's output: pre += b, act = gelu(pre), in one pass.
DTL_ELEMENTWISE_CLONES void bias_gelu_rows(float* pre, float* act, const float* b, std::size_t rows, int O) {
  for (std::size_t r = 0; r < rows; ++r) {
    float* p = pre + r * std::size_t(O);
    float* a = act + r * std::size_t(O);
    if (b)
      for (int o = 0; o < O; ++o) p[o] += b[o];
    for (int o = 0; o < O; ++o) a[o] = gelu(p[o]);
  }
}

DTL_ELEMENTWISE_CLONES void residual_add_part(const float* a, const float* b, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

DTL_ELEMENTWISE_CLONES void gelu_backward_part(const float* x, const float* dy, float* dx, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = fast_tanh(kGeluC * (v + 0.044715f * v * v * v));
    const float dt = (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
  }
}

// Element-wise work split over the CPU threads in parts of whole 16 KiB (cpu_threads.h).
constexpr std::size_t kElementGrain = 4096;

}  // namespace

void gelu_forward(const float* x, float* y, std::size_t n) {
  parallel_for(n, kElementGrain, [&](std::size_t a, std::size_t b) { gelu_forward_part(x + a, y + a, b - a); });
}

void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) {
  parallel_for(n, kElementGrain,
               [&](std::size_t a, std::size_t b) { gelu_backward_part(x + a, dy + a, dx + a, b - a); });
}

// Each part: its rows' GEMM, then their bias and GELU while the part is the one just written.
void linear_gelu_forward(const float* X, const float* W, const float* b, float* pre, float* act, int B, int I, int O) {
  parallel_for(std::size_t(B), kGemmGrain, [&](std::size_t first, std::size_t last) {
    float* part = pre + first * std::size_t(O);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(last - first), O, I, 1.0f, X + first * std::size_t(I), I,
                W, I, 0.0f, part, O);
    bias_gelu_rows(part, act + first * std::size_t(O), b, last - first, O);
  });
}

void residual_add(const float* a, const float* b, float* out, std::size_t n) {
  parallel_for(n, kElementGrain,
               [&](std::size_t lo, std::size_t hi) { residual_add_part(a + lo, b + lo, out + lo, hi - lo); });
}

float mse_loss(const float* y, const float* target, float* dy, std::size_t n) {
  double loss = 0;
  const float k = 2.0f / float(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float d = y[i] - target[i];
    loss += double(d) * double(d);
    dy[i] = k * d;
  }
  return float(loss / double(n));
}

float softmax_cross_entropy(const float* logits, const int* labels, float* dlogits, int B, int C) {
  double loss = 0;
  for (int r = 0; r < B; ++r) {
    const float* z = logits + std::size_t(r) * std::size_t(C);
    float* dz = dlogits + std::size_t(r) * std::size_t(C);
    const float mx = *std::max_element(z, z + C);  // subtract the max: exp never overflows
    double sum = 0;
    for (int c = 0; c < C; ++c) sum += std::exp(double(z[c] - mx));
    const double log_sum = std::log(sum) + double(mx);
    loss += log_sum - double(z[labels[r]]);
    for (int c = 0; c < C; ++c) dz[c] = float((std::exp(double(z[c]) - log_sum) - (c == labels[r] ? 1.0 : 0.0)) / B);
  }
  return float(loss / B);
}

void sgd_step(float* w, const float* g, std::size_t n, float lr) { axpy(-lr, g, w, n); }

namespace {
// __restrict: the four arrays never overlap, which lets the compiler vectorize the loop
// (with -fno-math-errno, so sqrt is one instruction; see kernels/CMakeLists.txt).
void adamw_part(float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v, std::size_t n,
                const AdamWConfig& c, float inv_bc1, float inv_bc2) {
  for (std::size_t i = 0; i < n; ++i) {
    const float mi = c.beta1 * m[i] + (1.0f - c.beta1) * g[i];
    const float vi = c.beta2 * v[i] + (1.0f - c.beta2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    const float update = (mi * inv_bc1) / (std::sqrt(vi * inv_bc2) + c.eps);
    w[i] -= c.lr * (update + c.weight_decay * w[i]);
  }
}
}  // namespace

void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, int t) {
  const float inv_bc1 = 1.0f / (1.0f - std::pow(c.beta1, float(t)));
  const float inv_bc2 = 1.0f / (1.0f - std::pow(c.beta2, float(t)));
  parallel_for(n, kElementGrain, [&](std::size_t a, std::size_t b) {
    adamw_part(w + a, g + a, m + a, v + a, b - a, c, inv_bc1, inv_bc2);
  });
}

void axpy(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void scale(float a, float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= a;
}

// ---- references: straightforward loops in double ------------------------------------

bool adamw_step_mixed(float* master, const void* grads, void* params, DType dtype, float* m, float* v, std::size_t n,
                      const AdamWConfig& c, int t, float inv_scale) {
  const std::size_t esize = dtype_size(dtype);
  auto block_of = [&](const void* base, std::size_t i) { return static_cast<const std::byte*>(base) + i * esize; };
  float g[4096];
  for (std::size_t i = 0; i < n; i += 4096) {  // first pass: any overflow skips the whole step
    const std::size_t k = std::min<std::size_t>(4096, n - i);
    to_float(block_of(grads, i), dtype, g, k);
    for (std::size_t j = 0; j < k; ++j)
      if (!std::isfinite(g[j])) return false;
  }
  for (std::size_t i = 0; i < n; i += 4096) {
    const std::size_t k = std::min<std::size_t>(4096, n - i);
    to_float(block_of(grads, i), dtype, g, k);
    for (std::size_t j = 0; j < k; ++j) g[j] *= inv_scale;
    adamw_step(master + i, g, m + i, v + i, k, c, t);
    from_float(master + i, static_cast<std::byte*>(params) + i * esize, dtype, k);
  }
  return true;
}

namespace reference {

void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O) {
  for (int r = 0; r < B; ++r)
    for (int o = 0; o < O; ++o) {
      double acc = b ? b[o] : 0.0;
      for (int i = 0; i < I; ++i) acc += double(X[r * I + i]) * double(W[o * I + i]);
      Y[r * O + o] = float(acc);
    }
}

void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                     int O) {
  for (int r = 0; r < B; ++r)
    for (int i = 0; i < I; ++i) {
      double acc = 0;
      for (int o = 0; o < O; ++o) acc += double(dY[r * O + o]) * double(W[o * I + i]);
      if (dX) dX[r * I + i] = float(acc);
    }
  for (int o = 0; o < O; ++o) {
    for (int i = 0; i < I; ++i) {
      double acc = 0;
      for (int r = 0; r < B; ++r) acc += double(dY[r * O + o]) * double(X[r * I + i]);
      dW[o * I + i] = float(acc);
    }
    double s = 0;
    for (int r = 0; r < B; ++r) s += dY[r * O + o];
    db[o] = float(s);
  }
}

void gelu_forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = float(0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))));
  }
}

void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) {
  // Central difference of the float64 forward: independent of the analytic derivative.
  for (std::size_t i = 0; i < n; ++i) {
    auto f = [](double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); };
    const double h = 1e-5, v = x[i];
    dx[i] = float(dy[i] * (f(v + h) - f(v - h)) / (2 * h));
  }
}

float mse_loss(const float* y, const float* target, float* dy, std::size_t n) {
  double loss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = double(y[i]) - double(target[i]);
    loss += d * d;
    dy[i] = float(2.0 * d / double(n));
  }
  return float(loss / double(n));
}

float softmax_cross_entropy(const float* logits, const int* labels, float* dlogits, int B, int C) {
  double loss = 0;
  for (int r = 0; r < B; ++r) {
    std::vector<double> p(static_cast<std::size_t>(C));
    double sum = 0;
    for (int c = 0; c < C; ++c) sum += p[std::size_t(c)] = std::exp(double(logits[r * C + c]));
    for (int c = 0; c < C; ++c) {
      p[std::size_t(c)] /= sum;
      dlogits[r * C + c] = float((p[std::size_t(c)] - (c == labels[r])) / B);
    }
    loss -= std::log(p[std::size_t(labels[r])]);
  }
  return float(loss / B);
}

void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, int t) {
  for (std::size_t i = 0; i < n; ++i) {
    const double mi = c.beta1 * double(m[i]) + (1 - c.beta1) * double(g[i]);
    const double vi = c.beta2 * double(v[i]) + (1 - c.beta2) * double(g[i]) * double(g[i]);
    const double mhat = mi / (1 - std::pow(double(c.beta1), t)), vhat = vi / (1 - std::pow(double(c.beta2), t));
    w[i] = float(double(w[i]) - c.lr * (mhat / (std::sqrt(vhat) + c.eps) + c.weight_decay * double(w[i])));
    m[i] = float(mi);
    v[i] = float(vi);
  }
}

}  // namespace reference

}  // namespace dtl::kernels
