// Graded tests of the tensor-parallel layers (exercises/tensor_parallel.h), beside
// grade_test.cpp (the slices, f and g): column- and row-parallel linear layers against the
// full layer computed here in double on one rank, and vocab-parallel cross-entropy against
// the full softmax cross-entropy in double. The shared pieces: grade_util.h.
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/grade/tensor_parallel/grade_util.h"

using namespace dtl;
using namespace dtl::tp_grade;

// ---- ColumnParallelLinear and RowParallelLinear ------------------------------------------------

namespace {

// nn.Linear on one rank in plain float loops (accumulated in double): the LinearMath the
// exercises are given, so a wrong result comes from how they call it, not from a kernel.
ex::LinearMath loop_math() {
  ex::LinearMath m;
  m.forward = [](const float* X, const float* W, const float* b, float* Y, int rows, int in, int out) {
    for (int i = 0; i < rows; ++i)
      for (int o = 0; o < out; ++o) {
        double s = b ? double(b[o]) : 0.0;
        for (int k = 0; k < in; ++k) s += double(X[i * in + k]) * double(W[o * in + k]);
        Y[i * out + o] = float(s);
      }
  };
  m.backward = [](const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int rows, int in,
                  int out, bool accumulate) {
    if (dX)
      for (int i = 0; i < rows; ++i)
        for (int k = 0; k < in; ++k) {
          double s = 0;
          for (int o = 0; o < out; ++o) s += double(dY[i * out + o]) * double(W[o * in + k]);
          dX[i * in + k] = float(s);
        }
    for (int o = 0; o < out; ++o) {
      for (int k = 0; k < in; ++k) {
        double s = accumulate ? double(dW[o * in + k]) : 0.0;
        for (int i = 0; i < rows; ++i) s += double(dY[i * out + o]) * double(X[i * in + k]);
        dW[o * in + k] = float(s);
      }
      if (db) {
        double s = accumulate ? double(db[o]) : 0.0;
        for (int i = 0; i < rows; ++i) s += double(dY[i * out + o]);
        db[o] = float(s);
      }
    }
  };
  return m;
}

// The full layer on one rank, in double: y = x·Wᵀ + b and, for an upstream gradient dy,
// dx = dy·W, dW = dyᵀ·x, db = Σ_rows dy. Inputs are floats (what the ranks get), rounded
// to double exactly.
struct FullLayer {
  int rows, in, out;
  std::vector<double> x, w, b, dy;  // [rows × in], [out × in], [out], [rows × out]
  std::vector<double> y, dx, dw, db;
  std::vector<double> dw0, db0;  // what the gradients hold before an accumulating backward

  FullLayer(int rows_, int in_, int out_, unsigned seed) : rows(rows_), in(in_), out(out_) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto draw = [&](std::size_t n) {
      std::vector<double> v(n);
      for (double& e : v) e = double(u(gen));
      return v;
    };
    const std::size_t R = std::size_t(rows), I = std::size_t(in), O = std::size_t(out);
    x = draw(R * I), w = draw(O * I), b = draw(O), dy = draw(R * O), dw0 = draw(O * I), db0 = draw(O);
    y.assign(R * O, 0), dx.assign(R * I, 0), dw.assign(O * I, 0), db.assign(O, 0);
    for (std::size_t i = 0; i < R; ++i)
      for (std::size_t o = 0; o < O; ++o) {
        double s = b[o];
        for (std::size_t k = 0; k < I; ++k) s += x[i * I + k] * w[o * I + k];
        y[i * O + o] = s;
      }
    for (std::size_t i = 0; i < R; ++i)
      for (std::size_t k = 0; k < I; ++k)
        for (std::size_t o = 0; o < O; ++o) dx[i * I + k] += dy[i * O + o] * w[o * I + k];
    for (std::size_t o = 0; o < O; ++o) {
      for (std::size_t k = 0; k < I; ++k)
        for (std::size_t i = 0; i < R; ++i) dw[o * I + k] += dy[i * O + o] * x[i * I + k];
      for (std::size_t i = 0; i < R; ++i) db[o] += dy[i * O + o];
    }
  }
};

constexpr int kLinRows = 8, kLinIn = 8, kLinOut = 12;  // divisible by every T

std::string linear_case(const std::string& fn, int T, TpMode m, const std::string& extra = {}) {
  return fn + " (" + mode_name(m) + ", T " + str(T) + ", full layer rows " + str(kLinRows) + " × in " + str(kLinIn) +
         " → out " + str(kLinOut) + extra + ")";
}

std::vector<double> plus(const std::vector<double>& a, const std::vector<double>& b, bool add) {
  if (!add) return a;
  std::vector<double> s(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) s[i] = a[i] + b[i];
  return s;
}

// Column-parallel, forward: rank r holds rows [r·out/T, (r+1)·out/T) of W and b; its
// output is those columns of the full y, over all rows.
void check_column_forward(int T, TpMode m) {
  const FullLayer L(kLinRows, kLinIn, kLinOut, 11u + unsigned(T));
  const bool sp = m == TpMode::sequence_parallel;
  const std::string w = linear_case("column_parallel_forward", T, m);
  const ex::LinearMath math = loop_math();
  const auto run = grade::run_graded(T, [&](Comm& c) {
    const int r = c.rank(), ol = kLinOut / T, o0 = r * ol, rl = kLinRows / T;
    std::vector<float> weight = to_float(block(L.w, kLinIn, o0, o0 + ol, 0, kLinIn));
    std::vector<float> bias = to_float(block(L.b, 1, o0, o0 + ol, 0, 1));
    std::vector<float> x = sp ? to_float(block(L.x, kLinIn, r * rl, (r + 1) * rl, 0, kLinIn)) : to_float(L.x);
    std::vector<float> x_full = nan_floats(L.x.size()), y = nan_floats(std::size_t(kLinRows) * std::size_t(ol));
    const ex::TpLinear layer{weight.data(), bias.data(), nullptr, nullptr, kLinIn, ol};
    const float* x_in = ex::column_parallel_forward({c, m}, math, layer, x.data(), x_full.data(), y.data(), kLinRows);
    const std::string at = w + ", rank " + str(r);
    expect_close(y.data(), block(L.y, kLinOut, 0, kLinRows, o0, o0 + ol), ol,
                 at + ": y_local (its output features " + str(o0) + " .. " + str(o0 + ol - 1) +
                     " of the full layer's y, every row)");
    const bool good_ptr = x_in == x_full.data() || ((!sp || T == 1) && x_in == x.data());
    DTL_GRADE_EXPECT(good_ptr) << at << ": returned "
                               << (x_in == x.data() ? "x, which holds only this rank's rows" : "another pointer")
                               << ", expected what f's forward returned (what the layer multiplied, kept for backward)";
    if (good_ptr) expect_close(x_in, L.x, kLinIn, at + ": the returned input (all rows of x)");
  });
  DTL_ASSERT_RAN(run, w);
  if (sp)
    expect_pattern(run, {{"all_gather", std::uint64_t(L.x.size()) * 4}}, w,
                   "f's forward under sequence parallelism: one all_gather of x's rows");
  else
    expect_pattern(run, {}, w, "plain mode: f's forward is the identity, a column-parallel forward sends nothing");
}

// Column-parallel, backward from the full x (what f's forward returns): dW, db are the
// rank's rows of the full gradients, dx the full dx (plain) or the rank's rows (SP).
void check_column_backward(int T, TpMode m, bool accumulate) {
  const FullLayer L(kLinRows, kLinIn, kLinOut, 23u + unsigned(T));
  const bool sp = m == TpMode::sequence_parallel;
  const std::string w = linear_case("column_parallel_backward", T, m, accumulate ? ", accumulate" : "");
  const ex::LinearMath math = loop_math();
  const auto run = grade::run_graded(T, [&](Comm& c) {
    const int r = c.rank(), ol = kLinOut / T, o0 = r * ol, rl = kLinRows / T;
    std::vector<float> weight = to_float(block(L.w, kLinIn, o0, o0 + ol, 0, kLinIn));
    std::vector<float> bias = to_float(block(L.b, 1, o0, o0 + ol, 0, 1));
    const std::vector<double> dw0 = block(L.dw0, kLinIn, o0, o0 + ol, 0, kLinIn),
                              db0 = block(L.db0, 1, o0, o0 + ol, 0, 1);
    std::vector<float> dw = accumulate ? to_float(dw0) : nan_floats(dw0.size());
    std::vector<float> db = accumulate ? to_float(db0) : nan_floats(db0.size());
    const std::vector<float> x_in = to_float(L.x), dy = to_float(block(L.dy, kLinOut, 0, kLinRows, o0, o0 + ol));
    std::vector<float> dx_full = nan_floats(L.x.size()), dx = nan_floats(sp ? L.x.size() / std::size_t(T) : L.x.size());
    const ex::TpLinear layer{weight.data(), bias.data(), dw.data(), db.data(), kLinIn, ol};
    ex::column_parallel_backward({c, m}, math, layer, x_in.data(), dy.data(), dx_full.data(), dx.data(), kLinRows,
                                 accumulate);
    const std::string at = w + ", rank " + str(r);
    expect_close(
        dx.data(), sp ? block(L.dx, kLinIn, r * rl, (r + 1) * rl, 0, kLinIn) : L.dx, kLinIn,
        at + (sp ? ": dx (its rows " + str(r * rl) + " .. " + str((r + 1) * rl - 1) + " of the full layer's dx)"
                 : ": dx (the full layer's dx: every rank's slice saw all of x, so the partial dx are summed)"));
    expect_close(dw.data(), plus(block(L.dw, kLinIn, o0, o0 + ol, 0, kLinIn), dw0, accumulate), kLinIn,
                 at + ": weight_grad (rows " + str(o0) + " .. " + str(o0 + ol - 1) + " of the full layer's dW" +
                     (accumulate ? ", added to what it held" : "") + ")");
    expect_close(db.data(), plus(block(L.db, 1, o0, o0 + ol, 0, 1), db0, accumulate), 0,
                 at + ": bias_grad (elements " + str(o0) + " .. " + str(o0 + ol - 1) + " of the full layer's db" +
                     (accumulate ? ", added to what it held" : "") + ")");
  });
  DTL_ASSERT_RAN(run, w);
  const std::uint64_t bytes = std::uint64_t(L.x.size()) * 4;
  if (sp)
    expect_pattern(run, {{"reduce_scatter", bytes}}, w,
                   "f's backward under sequence parallelism: one reduce_scatter of dx");
  else
    expect_pattern(run, {{"all_reduce", bytes}}, w, "f's backward: one all_reduce (sum) of the partial dx");
}

// Row-parallel, forward: rank r holds columns [r·in/T, (r+1)·in/T) of W (rank 0 the bias)
// and those features of x over all rows; the output is the full y (plain) or its rows (SP).
void check_row_forward(int T, TpMode m) {
  const FullLayer L(kLinRows, kLinIn, kLinOut, 37u + unsigned(T));
  const bool sp = m == TpMode::sequence_parallel;
  const std::string w = linear_case("row_parallel_forward", T, m);
  const ex::LinearMath math = loop_math();
  const auto run = grade::run_graded(T, [&](Comm& c) {
    const int r = c.rank(), il = kLinIn / T, i0 = r * il, rl = kLinRows / T;
    std::vector<float> weight = to_float(block(L.w, kLinIn, 0, kLinOut, i0, i0 + il));
    std::vector<float> bias = to_float(L.b);
    std::vector<float> x = to_float(block(L.x, kLinIn, 0, kLinRows, i0, i0 + il));
    std::vector<float> y_partial = nan_floats(L.y.size()),
                       y = nan_floats(sp ? L.y.size() / std::size_t(T) : L.y.size());
    const ex::TpLinear layer{weight.data(), r == 0 ? bias.data() : nullptr, nullptr, nullptr, il, kLinOut};
    ex::row_parallel_forward({c, m}, math, layer, x.data(), y_partial.data(), y.data(), kLinRows);
    expect_close(y.data(), sp ? block(L.y, kLinOut, r * rl, (r + 1) * rl, 0, kLinOut) : L.y, kLinOut,
                 w + ", rank " + str(r) +
                     (sp ? ": y (its rows " + str(r * rl) + " .. " + str((r + 1) * rl - 1) +
                               " of the full layer's y, the partial outputs summed, the bias once)"
                         : ": y (the full layer's y: the partial outputs summed, the bias once)"));
  });
  DTL_ASSERT_RAN(run, w);
  const std::uint64_t bytes = std::uint64_t(L.y.size()) * 4;
  if (sp)
    expect_pattern(run, {{"reduce_scatter", bytes}}, w, "g's forward under sequence parallelism: one reduce_scatter");
  else
    expect_pattern(run, {{"all_reduce", bytes}}, w, "g's forward: one all_reduce (sum) of the partial outputs");
}

// Row-parallel, backward: dx is the rank's features of the full dx over all rows, dW its
// columns of the full dW, db the whole db on every rank.
void check_row_backward(int T, TpMode m, bool accumulate) {
  const FullLayer L(kLinRows, kLinIn, kLinOut, 41u + unsigned(T));
  const bool sp = m == TpMode::sequence_parallel;
  const std::string w = linear_case("row_parallel_backward", T, m, accumulate ? ", accumulate" : "");
  const ex::LinearMath math = loop_math();
  const auto run = grade::run_graded(T, [&](Comm& c) {
    const int r = c.rank(), il = kLinIn / T, i0 = r * il, rl = kLinRows / T;
    std::vector<float> weight = to_float(block(L.w, kLinIn, 0, kLinOut, i0, i0 + il));
    std::vector<float> bias = to_float(L.b);
    const std::vector<double> dw0 = block(L.dw0, kLinIn, 0, kLinOut, i0, i0 + il);
    std::vector<float> dw = accumulate ? to_float(dw0) : nan_floats(dw0.size());
    std::vector<float> db = accumulate ? to_float(L.db0) : nan_floats(L.db0.size());
    const std::vector<float> x = to_float(block(L.x, kLinIn, 0, kLinRows, i0, i0 + il));
    const std::vector<float> dy =
        sp ? to_float(block(L.dy, kLinOut, r * rl, (r + 1) * rl, 0, kLinOut)) : to_float(L.dy);
    std::vector<float> dy_full = nan_floats(L.dy.size()), dx = nan_floats(x.size());
    const ex::TpLinear layer{weight.data(), r == 0 ? bias.data() : nullptr, dw.data(), db.data(), il, kLinOut};
    ex::row_parallel_backward({c, m}, math, layer, x.data(), dy.data(), dy_full.data(), dx.data(), kLinRows,
                              accumulate);
    const std::string at = w + ", rank " + str(r);
    expect_close(dx.data(), block(L.dx, kLinIn, 0, kLinRows, i0, i0 + il), il,
                 at + ": dx_local (its input features " + str(i0) + " .. " + str(i0 + il - 1) +
                     " of the full layer's dx, every row)");
    expect_close(dw.data(), plus(block(L.dw, kLinIn, 0, kLinOut, i0, i0 + il), dw0, accumulate), il,
                 at + ": weight_grad (columns " + str(i0) + " .. " + str(i0 + il - 1) + " of the full layer's dW" +
                     (accumulate ? ", added to what it held" : "") + ")");
    expect_close(db.data(), plus(L.db, L.db0, accumulate), 0,
                 at + ": bias_grad (the full layer's whole db, on every rank" +
                     (accumulate ? ", added to what it held" : "") + ")");
  });
  DTL_ASSERT_RAN(run, w);
  if (sp)
    expect_pattern(run, {{"all_gather", std::uint64_t(L.dy.size()) * 4}}, w,
                   "g's backward under sequence parallelism: one all_gather of dy's rows");
  else
    expect_pattern(run, {}, w, "plain mode: g's backward is the identity, a row-parallel backward sends nothing");
}

}  // namespace

TEST(ColumnParallelLinear, ForwardGivesTheRanksOutputFeatures) {
  for (const TpMode m : kModes)
    for (const int T : kTpSizes) check_column_forward(T, m);
}

TEST(ColumnParallelLinear, BackwardGivesTheFullLayersGradients) {
  for (const TpMode m : kModes)
    for (const int T : kTpSizes)
      for (const bool accumulate : {false, true}) check_column_backward(T, m, accumulate);
}

TEST(RowParallelLinear, ForwardSumsThePartialOutputsWithTheBiasOnce) {
  for (const TpMode m : kModes)
    for (const int T : kTpSizes) check_row_forward(T, m);
}

TEST(RowParallelLinear, BackwardGivesTheFullLayersGradients) {
  for (const TpMode m : kModes)
    for (const int T : kTpSizes)
      for (const bool accumulate : {false, true}) check_row_backward(T, m, accumulate);
}

// ---- VocabParallelCrossEntropy ---------------------------------------------------------------

namespace {

constexpr int kCeRows = 6, kVocab = 16;
// Targets in every rank's slice for T = 4 (entries [0,4), [4,8), [8,12), [12,16)).
const int kTargets[kCeRows] = {1, 5, 10, 15, 3, 12};

// Logits: small values, plus rows with large ones (exp(100) overflows a float), among
// them a row where the target is the largest logit and one where it is far below it.
std::vector<double> ce_logits() {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<double> l(std::size_t(kCeRows) * kVocab);
  for (double& e : l) e = double(u(gen));
  auto at = [&](int i, int v) -> double& { return l[std::size_t(i) * kVocab + std::size_t(v)]; };
  at(1, 5) = 80.0;                                     // the target is the largest logit
  at(2, 13) = 120.0, at(2, 2) = 110.0;                 // large, on other ranks than the target's
  for (int v = 0; v < kVocab; ++v) at(3, v) += 100.0;  // the whole row large
  at(4, 9) = 90.0;                                     // the target far below the max
  return l;
}

// The full softmax cross-entropy in double: the mean loss and dL/dlogits.
std::pair<double, std::vector<double>> full_cross_entropy(const std::vector<double>& logits) {
  std::vector<double> grad(logits.size());
  double loss = 0;
  for (int i = 0; i < kCeRows; ++i) {
    const double* row = logits.data() + std::size_t(i) * kVocab;
    double mx = row[0], sum = 0;
    for (int v = 1; v < kVocab; ++v) mx = std::max(mx, row[v]);
    for (int v = 0; v < kVocab; ++v) sum += std::exp(row[v] - mx);
    loss += std::log(sum) + mx - row[kTargets[i]];
    for (int v = 0; v < kVocab; ++v)
      grad[std::size_t(i) * kVocab + std::size_t(v)] =
          (std::exp(row[v] - mx) / sum - (v == kTargets[i] ? 1.0 : 0.0)) / kCeRows;
  }
  return {loss / kCeRows, grad};
}

void check_cross_entropy(int T) {
  const std::vector<double> logits = ce_logits();
  const auto reference = full_cross_entropy(logits);
  const double loss = reference.first;
  const std::vector<double>& grad = reference.second;
  const int vl = kVocab / T;
  const std::string w = "vocab_parallel_cross_entropy (T " + str(T) + ", rows " + str(kCeRows) + ", vocabulary " +
                        str(kVocab) + ", " + str(vl) + " entries per rank, logits up to 120)";
  const auto run = grade::run_graded(T, [&](Comm& c) {
    const int r = c.rank(), v0 = r * vl;
    const std::vector<float> local = to_float(block(logits, kVocab, 0, kCeRows, v0, v0 + vl));
    std::vector<float> dlogits = nan_floats(local.size());
    const float got = ex::vocab_parallel_cross_entropy(c, local.data(), kTargets, kCeRows, vl, v0, dlogits.data());
    const std::string at = w + ", rank " + str(r) + " (vocabulary entries " + str(v0) + " .. " + str(v0 + vl - 1) + ")";
    DTL_GRADE_EXPECT(std::fabs(double(got) - loss) <= 1e-5 * std::max(1.0, std::fabs(loss)))
        << at << ": the loss is " << grade::plain(got) << ", expected " << grade::plain(loss)
        << " (the mean over rows of log Σ exp(logit) − the target's logit; subtract each row's max before exp)";
    expect_close(dlogits.data(), block(grad, kVocab, 0, kCeRows, v0, v0 + vl), vl,
                 at + ": dlogits_local (columns are its local entries; (softmax − one_hot(target)) / rows)");
  });
  DTL_ASSERT_RAN(run, w);
  const std::uint64_t bytes = std::uint64_t(kCeRows) * 4;
  for (std::size_t r = 0; r < run.ranks.size(); ++r)
    for (std::size_t i = 0; i < run.ranks[r].collectives.size(); ++i)
      DTL_GRADE_ASSERT(run.ranks[r].collectives[i] != "all_gather")
          << w << ", rank " << r << ": it calls all_gather (" << run.ranks[r].collective_bytes[i]
          << " B); never gather the logits, all-reduce three numbers per row instead";
  expect_pattern(run, {{"all_reduce", bytes}, {"all_reduce", bytes}, {"all_reduce", bytes}}, w,
                 "three all_reduces of one float per row: the row max, Σ exp(logit − max), the target's logit");
}

}  // namespace

TEST(VocabParallelCrossEntropy, MatchesTheFullSoftmaxCrossEntropyWithThreeAllReduces) {
  for (const int T : kTpSizes) check_cross_entropy(T);
}
