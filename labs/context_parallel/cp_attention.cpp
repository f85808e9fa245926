// Blockwise causal attention with the online softmax (cp_attention.h has the formulas).
// Written as plain loops over (query position, sequence, head, key) so each line reads as
// its formula; the context-parallel labs' sizes are small enough for that.
#include "labs/context_parallel/cp_attention.h"

#include <vector>
#include <utility>
#include <array>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "exercises/context_parallel.h"

namespace dtl::cp {

namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// Head h's d features of row i·B + b of a block.
const float* head_of(const CpRows& r, const CpShape& s, int i, int b, int h) {
  return r.data + std::size_t(i * s.batch + b) * std::size_t(r.stride) + std::size_t(h * s.head_dim);
}

// The index of (position i, sequence b, head h) in the [rows × A] per-head arrays.
std::size_t row_head(const CpShape& s, int i, int b, int h) { return std::size_t((i * s.batch + b) * s.heads + h); }

float dot(const float* a, const float* b, int d) {
  float sum = 0;
  for (int f = 0; f < d; ++f) sum += a[f] * b[f];
  return sum;
}

// e^{x − m} where x = −∞ means "no contribution": 0, never e^{−∞ − (−∞)} = NaN.
float weight(float x, float m) { return x == kMinusInf ? 0.0f : std::exp(x - m); }

void check_block(const CpShape& s, const CpRows& r, const char* what) {
  if (r.n > 0 && (r.data == nullptr || r.pos == nullptr))
    throw Error(std::string(what) + " block of " + std::to_string(r.n) + " positions has no data or positions");
  if (r.n > 0 && r.stride < s.width())
    throw Error(std::string(what) + " rows are " + std::to_string(r.stride) + " floats apart, fewer than the " +
                std::to_string(s.width()) + " of A·d: give the row stride of the buffer they live in");
}

}  // namespace

CpPartial empty_partial(const CpShape& s, int n) {
  const std::size_t rows = std::size_t(n * s.batch);
  CpPartial p;
  p.o.assign(rows * std::size_t(s.width()), 0.0f);
  p.m.assign(rows * std::size_t(s.heads), kMinusInf);
  p.l.assign(rows * std::size_t(s.heads), 0.0f);
  return p;
}

CpPartial block_forward(const CpShape& s, const CpRows& q, const CpRows& k, const CpRows& v) {
  check_block(s, q, "query"), check_block(s, k, "key"), check_block(s, v, "value");
  if (k.n != v.n) throw Error("block_forward: the key and value blocks hold different positions");
  const int d = s.head_dim;
  const float scale = 1.0f / std::sqrt(float(d));
  CpPartial p = empty_partial(s, q.n);
  std::vector<float> scores(std::size_t(k.n));
  for (int i = 0; i < q.n; ++i)
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.heads; ++h) {
        const float* qi = head_of(q, s, i, b, h);
        float m = kMinusInf;
        for (int j = 0; j < k.n; ++j) {  // s_j = q·k_j/√d for the visible keys; m their max
          scores[std::size_t(j)] = k.pos[j] <= q.pos[i] ? dot(qi, head_of(k, s, j, b, h), d) * scale : kMinusInf;
          m = std::max(m, scores[std::size_t(j)]);
        }
        const std::size_t at = row_head(s, i, b, h);
        if (m == kMinusInf) continue;  // every key is in this query's future: the empty partial
        float* o = p.o.data() + at * std::size_t(d);
        float l = 0;
        for (int j = 0; j < k.n; ++j) {  // l = Σ e^{s_j − m},  o = Σ e^{s_j − m}·v_j
          const float w = weight(scores[std::size_t(j)], m);
          if (w == 0.0f) continue;
          l += w;
          const float* vj = head_of(v, s, j, b, h);
          for (int f = 0; f < d; ++f) o[f] += w * vj[f];
        }
        p.m[at] = m, p.l[at] = l;
      }
  return p;
}

void merge_partial(CpPartial& acc, const CpPartial& other, const CpShape& s) {
  if (acc.m.size() != other.m.size() || acc.o.size() != other.o.size() || acc.l.size() != acc.m.size() ||
      other.l.size() != other.m.size() || acc.o.size() != acc.m.size() * std::size_t(s.head_dim))
    throw Error("merge_partial: the two partial results belong to query blocks of different sizes");
  // The learner's online-softmax merge (exercises.h): per (row, head) pair, rescale both
  // sides to the larger max and add.
  ex::online_softmax_merge(acc.o.data(), acc.m.data(), acc.l.data(), other.o.data(), other.m.data(), other.l.data(),
                           int(acc.m.size()), s.head_dim);
}

void finalize_partial(const CpPartial& p, const CpShape& s, float* out, int out_stride, float* lse) {
  const int d = s.head_dim, rows = int(p.m.size()) / s.heads;
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < s.heads; ++h) {
      const std::size_t at = std::size_t(r * s.heads + h);
      float* y = out + std::size_t(r) * std::size_t(out_stride) + std::size_t(h * d);
      const float* o = p.o.data() + at * std::size_t(d);
      const bool seen = p.l[at] > 0.0f;
      for (int f = 0; f < d; ++f) y[f] = seen ? o[f] / p.l[at] : 0.0f;
      lse[at] = seen ? p.m[at] + std::log(p.l[at]) : kMinusInf;
    }
}

std::vector<float> softmax_delta(const CpShape& s, int n, const float* out, int out_stride, const float* dout,
                                 int dout_stride) {
  const int d = s.head_dim;
  std::vector<float> delta(std::size_t(n * s.batch * s.heads));
  for (int r = 0; r < n * s.batch; ++r)
    for (int h = 0; h < s.heads; ++h)
      delta[std::size_t(r * s.heads + h)] = dot(out + std::size_t(r) * std::size_t(out_stride) + std::size_t(h * d),
                                                dout + std::size_t(r) * std::size_t(dout_stride) + std::size_t(h * d), d);
  return delta;
}

void block_backward(const CpShape& s, const CpRows& q, const CpRows& k, const CpRows& v, const CpQueryGrad& g,
                    const CpKeyGrad& kg) {
  check_block(s, q, "query"), check_block(s, k, "key"), check_block(s, v, "value");
  const int d = s.head_dim;
  const float scale = 1.0f / std::sqrt(float(d));
  for (int i = 0; i < q.n; ++i)
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.heads; ++h) {
        const std::size_t at = row_head(s, i, b, h), row = std::size_t(i * s.batch + b), col = std::size_t(h * d);
        if (g.lse[at] == kMinusInf) continue;  // a query that saw no key has no gradient
        const float* qi = head_of(q, s, i, b, h);
        const float* dout = g.dout + row * std::size_t(g.dout_stride) + col;
        float* dq = g.dq + row * std::size_t(g.dq_stride) + col;
        for (int j = 0; j < k.n; ++j) {
          if (k.pos[j] > q.pos[i]) continue;  // masked: P = 0, nothing flows
          const float* kj = head_of(k, s, j, b, h);
          const float* vj = head_of(v, s, j, b, h);
          const float p = std::exp(dot(qi, kj, d) * scale - g.lse[at]);  // P = exp(S − LSE)
          const float ds = p * (dot(dout, vj, d) - g.delta[at]);           // dS = P·(dP − D)
          const std::size_t key_row = std::size_t(j * s.batch + b) * std::size_t(kg.stride) + col;
          float* dk = kg.dk + key_row;
          float* dv = kg.dv + key_row;
          for (int f = 0; f < d; ++f) {
            dv[f] += p * dout[f];           // dV += Pᵀ·dout
            dq[f] += ds * kj[f] * scale;    // dQ += dS·K/√d
            dk[f] += ds * qi[f] * scale;    // dK += dSᵀ·Q/√d
          }
        }
      }
}

namespace {

// One side's partial (m, l, o over d = 2) from its scores and values, in float64, as the
// exercise defines it; no score: m = −∞, l = 0, o = 0.
struct CraftedSide {
  std::vector<double> scores;
  std::vector<std::array<double, 2>> values;
};

void crafted_partial(const CraftedSide& side, float* o, float* m, float* l) {
  double mx = -std::numeric_limits<double>::infinity(), sum = 0, acc[2] = {0, 0};
  for (double sc : side.scores) mx = std::max(mx, sc);
  for (std::size_t i = 0; i < side.scores.size(); ++i) {
    const double w = std::exp(side.scores[i] - mx);
    sum += w, acc[0] += w * side.values[i][0], acc[1] += w * side.values[i][1];
  }
  *m = float(mx), *l = float(sum), o[0] = float(acc[0]), o[1] = float(acc[1]);
}

}  // namespace

double merge_error_on_crafted_partials() {
  const CraftedSide empty{};
  const std::vector<std::pair<CraftedSide, CraftedSide>> cases = {
      {empty, empty},
      {empty, {{1.0, 2.0}, {{1, -1}, {3, 0.5}}}},
      {{{300.0, 0.0}, {{2, 1}, {-1, 4}}}, {{-300.0, 299.0}, {{5, 5}, {0.25, -2}}}},
      {{{4.0}, {{1, 2}}}, {{4.0, -4.0}, {{3, 0}, {7, 7}}}}};
  const int pairs = int(cases.size()), d = 2;
  const auto n = std::size_t(pairs);  // (a named count: `m(std::size_t(pairs))` would declare a function)
  std::vector<float> o(n * std::size_t(d)), m(n), l(n);
  std::vector<float> o2(o.size()), m2(m.size()), l2(l.size());
  for (int p = 0; p < pairs; ++p) {
    crafted_partial(cases[std::size_t(p)].first, &o[std::size_t(p * d)], &m[std::size_t(p)], &l[std::size_t(p)]);
    crafted_partial(cases[std::size_t(p)].second, &o2[std::size_t(p * d)], &m2[std::size_t(p)], &l2[std::size_t(p)]);
  }
  ex::online_softmax_merge(o.data(), m.data(), l.data(), o2.data(), m2.data(), l2.data(), pairs, d);
  double worst = 0;
  for (int p = 0; p < pairs; ++p) {
    CraftedSide both = cases[std::size_t(p)].first;  // the reference: one softmax over both key sets
    const CraftedSide& b = cases[std::size_t(p)].second;
    both.scores.insert(both.scores.end(), b.scores.begin(), b.scores.end());
    both.values.insert(both.values.end(), b.values.begin(), b.values.end());
    float ro[2], rm, rl;
    crafted_partial(both, ro, &rm, &rl);
    for (int f = 0; f < d; ++f) {
      const double got = o[std::size_t(p * d + f)], lp = l[std::size_t(p)];
      const double err = both.scores.empty() ? std::fabs(got) + std::fabs(lp) : std::fabs(got / lp - double(ro[f]) / rl);
      if (std::isnan(err)) return std::numeric_limits<double>::infinity();
      worst = std::max(worst, err);
    }
  }
  return worst;
}

}  // namespace dtl::cp
