#include "kernels/cpu/transformer_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "kernels/cpu/cpu_threads.h"
#include "kernels/cpu/vector_math.h"

namespace dtl::kernels {

namespace {

using detail::lane_sum;

// Both LayerNorm loops keep a row in L1 and sum it in SIMD lanes (vector_math.h): the
// plain `sum += x[i]` could not vectorize without reordering the sum.
DTL_ELEMENTWISE_CLONES void layernorm_forward_rows(const float* x, const float* w, const float* b, float* y,
                                                   float* mean, float* rstd, std::size_t first, std::size_t last,
                                                   int width, float eps) {
  for (std::size_t r = first; r < last; ++r) {
    const float* xr = x + r * std::size_t(width);
    float* yr = y + r * std::size_t(width);
    const float mu = lane_sum(width, [&](int i) { return xr[i]; }) / float(width);
    // two passes: Σ(x − μ)² does not cancel as Σx² − nμ² would
    const float var = lane_sum(width, [&](int i) { return (xr[i] - mu) * (xr[i] - mu); });
    const float rs = 1.0f / std::sqrt(var / float(width) + eps);
    for (int i = 0; i < width; ++i) yr[i] = (xr[i] - mu) * rs * w[i] + b[i];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

// dx of rows first … last − 1: each row needs only its own mean(g) and mean(g·x̂).
// With dw and db given (one thread), the same sweep also adds the rows into them: each row
// is read once for everything, and dw[i] still sums the rows in row order.
DTL_ELEMENTWISE_CLONES void layernorm_dx_rows(const float* x, const float* w, const float* mean, const float* rstd,
                                              const float* dy, float* dx, float* dw, float* db, std::size_t first,
                                              std::size_t last, int width) {
  for (std::size_t r = first; r < last; ++r) {
    const float* xr = x + r * std::size_t(width);
    const float* dyr = dy + r * std::size_t(width);
    float* dxr = dx + r * std::size_t(width);
    const float mu = mean[r], rs = rstd[r];
    // mean(g) and mean(g·x̂), g = dy·w
    const float mean_g = lane_sum(width, [&](int i) { return dyr[i] * w[i]; }) / float(width);
    const float mean_gx = lane_sum(width, [&](int i) { return dyr[i] * w[i] * ((xr[i] - mu) * rs); }) / float(width);
    for (int i = 0; i < width; ++i) dxr[i] += rs * (dyr[i] * w[i] - mean_g - ((xr[i] - mu) * rs) * mean_gx);
    if (!dw) continue;
    for (int i = 0; i < width; ++i) dw[i] += dyr[i] * ((xr[i] - mu) * rs);
    for (int i = 0; i < width; ++i) db[i] += dyr[i];
  }
}

// dw and db of features first … last − 1, summed over every row in row order: the same sums
// whichever features a thread takes. They add up in a copy local to the part and go back
// once: two threads adding every row into the two halves of one dw share the cache line at
// the boundary, and passing it to and fro made two threads slower than one (547 against
// 237 µs at 2048 × 256). One loop per output: a loop writing both would need more run-time
// overlap checks than the compiler makes, and would stay scalar.
DTL_ELEMENTWISE_CLONES void layernorm_dwdb_features(const float* x, const float* mean, const float* rstd,
                                                    const float* dy, float* dw, float* db, int rows, int width,
                                                    std::size_t first, std::size_t last) {
  const std::size_t n = last - first;
  std::vector<float> part_dw(dw + first, dw + last), part_db(db + first, db + last);
  float* pw = part_dw.data();
  float* pb = part_db.data();
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + std::size_t(r) * std::size_t(width) + first;
    const float* dyr = dy + std::size_t(r) * std::size_t(width) + first;
    const float mu = mean[r], rs = rstd[r];
    for (std::size_t i = 0; i < n; ++i) pw[i] += dyr[i] * ((xr[i] - mu) * rs);
    for (std::size_t i = 0; i < n; ++i) pb[i] += dyr[i];
  }
  std::copy(part_dw.begin(), part_dw.end(), dw + first);
  std::copy(part_db.begin(), part_db.end(), db + first);
}

}  // namespace

void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int rows,
                       int width, float eps) {
  parallel_for(std::size_t(rows), 16, [&](std::size_t first, std::size_t last) {
    layernorm_forward_rows(x, w, b, y, mean, rstd, first, last, width, eps);
  });
}

// One thread: one sweep over the rows. Several: dx by rows, then dw and db by features (a
// row split would have each thread add into all of dw); the same bits either way.
void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                        float* dx, float* dw, float* db, int rows, int width) {
  if (cpu_threads() == 1) {
    layernorm_dx_rows(x, w, mean, rstd, dy, dx, dw, db, 0, std::size_t(rows), width);
    return;
  }
  parallel_for(std::size_t(rows), 16, [&](std::size_t first, std::size_t last) {
    layernorm_dx_rows(x, w, mean, rstd, dy, dx, nullptr, nullptr, first, last, width);
  });
  parallel_for(std::size_t(width), detail::kLanes, [&](std::size_t first, std::size_t last) {
    layernorm_dwdb_features(x, mean, rstd, dy, dw, db, rows, width, first, last);
  });
}

// attention_forward and attention_backward: attention.cpp.

void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* out, int rows,
                       int width) {
  for (int r = 0; r < rows; ++r) {
    float* o = out + std::size_t(r) * std::size_t(width);
    const int local = tokens[r] - vocab_begin;
    if (local >= 0 && local < vocab_local)
      std::copy_n(table + std::size_t(local) * std::size_t(width), width, o);
    else
      std::fill_n(o, width, 0.0f);
  }
}

void embedding_backward(const int* tokens, const float* dout, float* dtable, int vocab_begin, int vocab_local, int rows,
                        int width) {
  for (int r = 0; r < rows; ++r) {
    const int local = tokens[r] - vocab_begin;
    if (local < 0 || local >= vocab_local) continue;
    const float* d = dout + std::size_t(r) * std::size_t(width);
    float* t = dtable + std::size_t(local) * std::size_t(width);
    for (int i = 0; i < width; ++i) t[i] += d[i];
  }
}

std::vector<int> rows_by_token(const int* tokens, int rows) {
  std::vector<int> order(std::size_t(rows > 0 ? rows : 0));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [tokens](int a, int b) { return tokens[a] < tokens[b]; });
  return order;
}

// ---- references: straightforward loops in double ------------------------------------

void position_forward(const float* table, float* x, int rows, int width, int rows_per_position) {
  for (int j = 0; j < rows; ++j) {  // row by row, the order the GPT's gradcheck was written against
    const float* t = table + std::size_t(j / rows_per_position) * std::size_t(width);
    float* xr = x + std::size_t(j) * std::size_t(width);
    for (int i = 0; i < width; ++i) xr[i] += t[i];
  }
}

void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position) {
  for (int j = 0; j < rows; ++j) {
    const float* d = dx + std::size_t(j) * std::size_t(width);
    float* t = dtable + std::size_t(j / rows_per_position) * std::size_t(width);
    for (int i = 0; i < width; ++i) t[i] += d[i];
  }
}

namespace reference {

namespace {
void layernorm_row(const double* x, const float* w, const float* b, double* y, int width, double eps) {
  double mu = 0, var = 0;
  for (int i = 0; i < width; ++i) mu += x[i];
  mu /= width;
  for (int i = 0; i < width; ++i) var += (x[i] - mu) * (x[i] - mu);
  const double rs = 1.0 / std::sqrt(var / width + eps);
  for (int i = 0; i < width; ++i) y[i] = (x[i] - mu) * rs * w[i] + b[i];
}
}  // namespace

void layernorm_forward(const float* x, const float* w, const float* b, float* y, int rows, int width, float eps) {
  const std::size_t n = static_cast<std::size_t>(width);
  std::vector<double> xr(n), yr(n);
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < width; ++i) xr[std::size_t(i)] = x[r * width + i];
    layernorm_row(xr.data(), w, b, yr.data(), width, eps);
    for (int i = 0; i < width; ++i) y[r * width + i] = float(yr[std::size_t(i)]);
  }
}

void layernorm_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db, int rows,
                        int width, float eps) {
  // dx: central differences of the float64 forward (independent of the analytic formula).
  // dw, db: Σ dy·x̂ and Σ dy, from that forward's normalized x (w = 1, b = 0 gives x̂).
  const std::size_t n = static_cast<std::size_t>(width);
  std::vector<double> xr(n), yp(n), ym(n);
  const std::vector<float> ones(n, 1.0f), zeros(n, 0.0f);
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < width; ++i) xr[std::size_t(i)] = x[r * width + i];
    layernorm_row(xr.data(), ones.data(), zeros.data(), yp.data(), width, eps);
    for (int i = 0; i < width; ++i) {
      dw[i] += float(dy[r * width + i] * yp[std::size_t(i)]);
      db[i] += dy[r * width + i];
    }
    for (int k = 0; k < width; ++k) {
      const double h = 1e-6, keep = xr[std::size_t(k)];
      xr[std::size_t(k)] = keep + h;
      layernorm_row(xr.data(), w, zeros.data(), yp.data(), width, eps);
      xr[std::size_t(k)] = keep - h;
      layernorm_row(xr.data(), w, zeros.data(), ym.data(), width, eps);
      xr[std::size_t(k)] = keep;
      double g = 0;
      for (int i = 0; i < width; ++i) g += dy[r * width + i] * (yp[std::size_t(i)] - ym[std::size_t(i)]) / (2 * h);
      dx[r * width + k] += float(g);
    }
  }
}

namespace {
// out for one (b, head) from double qkv, by the definition (masked keys skipped).
void attention_head(const std::vector<double>& qkv, std::vector<double>& out, const AttentionShape& s, int b, int h) {
  const int hd = s.heads * s.head_dim, W = 3 * hd;
  auto at = [&](int pos, int part, int i) {  // row pos·B + b; part 0, 1, 2 = Q, K, V
    return qkv[std::size_t((pos * s.batch + b) * W + part * hd + h * s.head_dim + i)];
  };
  for (int i = 0; i < s.seq; ++i) {
    std::vector<double> p(std::size_t(i) + 1);
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int j = 0; j <= i; ++j) {
      double dot = 0;
      for (int c = 0; c < s.head_dim; ++c) dot += at(i, 0, c) * at(j, 1, c);
      p[std::size_t(j)] = dot / std::sqrt(double(s.head_dim));
      mx = std::max(mx, p[std::size_t(j)]);
    }
    for (double& e : p) sum += e = std::exp(e - mx);
    for (int c = 0; c < s.head_dim; ++c) {
      double acc = 0;
      for (int j = 0; j <= i; ++j) acc += p[std::size_t(j)] / sum * at(j, 2, c);
      out[std::size_t((i * s.batch + b) * hd + h * s.head_dim + c)] = acc;
    }
  }
}

std::vector<double> attention_double(const std::vector<double>& qkv, const AttentionShape& s) {
  std::vector<double> out(std::size_t(s.seq) * std::size_t(s.batch) * std::size_t(s.heads * s.head_dim));
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h) attention_head(qkv, out, s, b, h);
  return out;
}
}  // namespace

void attention_forward(const float* qkv, float* out, const AttentionShape& s) {
  const std::size_t n = std::size_t(s.seq) * std::size_t(s.batch) * 3 * std::size_t(s.heads * s.head_dim);
  const std::vector<double> out_d = attention_double(std::vector<double>(qkv, qkv + n), s);
  for (std::size_t i = 0; i < out_d.size(); ++i) out[i] = float(out_d[i]);
}

void attention_backward(const float* qkv, const float* dout, float* dqkv, const AttentionShape& s, int every) {
  // Central differences of Σ dout·out in double, one qkv element at a time.
  const std::size_t n = std::size_t(s.seq) * std::size_t(s.batch) * 3 * std::size_t(s.heads * s.head_dim);
  std::vector<double> x(qkv, qkv + n);
  auto objective = [&] {
    const std::vector<double> o = attention_double(x, s);
    double sum = 0;
    for (std::size_t i = 0; i < o.size(); ++i) sum += double(dout[i]) * o[i];
    return sum;
  };
  for (std::size_t k = 0; k < n; k += std::size_t(every)) {
    const double h = 1e-6, keep = x[k];
    x[k] = keep + h;
    const double up = objective();
    x[k] = keep - h;
    const double down = objective();
    x[k] = keep;
    dqkv[k] = float((up - down) / (2 * h));
  }
}

}  // namespace reference

}  // namespace dtl::kernels
