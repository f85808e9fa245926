// Every CPU kernel against its float64 reference; the largest relative error is printed.
#include "kernels/cpu/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

using namespace dtl::kernels;

namespace {
using dtl::test::max_rel_error;
using dtl::test::random;
}  // namespace

TEST(Linear, ForwardAndBackwardMatchReference) {
  use_one_blas_thread();
  for (auto [B, I, O] : {std::tuple{1, 1, 1}, std::tuple{7, 13, 5}, std::tuple{32, 64, 48}, std::tuple{3, 200, 1}}) {
    const auto X = random(std::size_t(B * I), 1), W = random(std::size_t(O * I), 2, 0.1f),
               b = random(std::size_t(O), 3), dY = random(std::size_t(B * O), 4);
    std::vector<float> Y(std::size_t(B * O)), Yr(Y.size()), dX(std::size_t(B * I)), dXr(dX.size()),
        dW(std::size_t(O * I)), dWr(dW.size()), db(static_cast<std::size_t>(O)), dbr(db.size());
    linear_forward(X.data(), W.data(), b.data(), Y.data(), B, I, O);
    reference::linear_forward(X.data(), W.data(), b.data(), Yr.data(), B, I, O);
    linear_backward(X.data(), W.data(), dY.data(), dX.data(), dW.data(), db.data(), B, I, O);
    reference::linear_backward(X.data(), W.data(), dY.data(), dXr.data(), dWr.data(), dbr.data(), B, I, O);
    const double e[4] = {max_rel_error(Y, Yr), max_rel_error(dX, dXr), max_rel_error(dW, dWr), max_rel_error(db, dbr)};
    for (double x : e)
      EXPECT_LT(x, 1e-5) << "B=" << B << " I=" << I << " O=" << O << " rel errors Y " << e[0] << " dX " << e[1]
                         << " dW " << e[2] << " db " << e[3];
  }
}

// The fused layer against the float64 linear layer and GELU one after the other, and
// against the unfused fast path (bias rows then GEMM, then the GELU) within float32
// rounding; with and without a bias. residual_add exactly against a + b.
TEST(LinearGelu, FusedMatchesTheLayerThenTheGelu) {
  use_one_blas_thread();
  const int B = 37, I = 48, O = 130;
  const auto X = random(std::size_t(B * I), 41), W = random(std::size_t(O * I), 42, 0.2f),
             b = random(std::size_t(O), 43);
  for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
    std::vector<float> pre(std::size_t(B * O)), act(pre.size()), pre_ref(pre.size()), act_ref(pre.size());
    std::vector<float> pre_fast(pre.size()), act_fast(pre.size());
    linear_gelu_forward(X.data(), W.data(), bias, pre.data(), act.data(), B, I, O);
    reference::linear_forward(X.data(), W.data(), bias, pre_ref.data(), B, I, O);
    reference::gelu_forward(pre_ref.data(), act_ref.data(), pre_ref.size());
    linear_forward(X.data(), W.data(), bias, pre_fast.data(), B, I, O);
    gelu_forward(pre_fast.data(), act_fast.data(), pre_fast.size());
    std::printf("linear + gelu fused (%s bias): pre %.2e, act %.2e against float64; %.2e, %.2e against unfused\n",
                bias ? "with" : "no", max_rel_error(pre, pre_ref), max_rel_error(act, act_ref),
                max_rel_error(pre, pre_fast), max_rel_error(act, act_fast));
    EXPECT_LT(max_rel_error(pre, pre_ref), 1e-5);
    EXPECT_LT(max_rel_error(act, act_ref), 1e-5);
    EXPECT_LT(max_rel_error(act, act_fast), 1e-6);
  }
  const auto x = random(5000, 44), y = random(5000, 45);
  std::vector<float> sum(5000);
  residual_add(x.data(), y.data(), sum.data(), sum.size());
  for (std::size_t i = 0; i < sum.size(); ++i) ASSERT_EQ(sum[i], x[i] + y[i]) << "element " << i;
}

TEST(Gelu, ForwardAndAnalyticBackwardMatchReference) {
  const auto x = random(1000, 5, 2.0f), dy = random(1000, 6);
  std::vector<float> y(1000), yr(1000), dx(1000), dxr(1000);
  gelu_forward(x.data(), y.data(), 1000);
  reference::gelu_forward(x.data(), yr.data(), 1000);
  gelu_backward(x.data(), dy.data(), dx.data(), 1000);
  reference::gelu_backward(x.data(), dy.data(), dxr.data(), 1000);  // a finite difference, not the same formula
  EXPECT_LT(max_rel_error(y, yr), 1e-6) << max_rel_error(y, yr);
  EXPECT_LT(max_rel_error(dx, dxr), 1e-4) << max_rel_error(dx, dxr);  // vs a finite difference
  // Every x on a fine grid over [-12, 12] (past where tanh saturates): the error of the
  // fp32 tanh form is at most a few ulps of max(1, |x|), wherever it is.
  std::vector<float> grid;
  for (int i = -12000; i <= 12000; ++i) grid.push_back(float(i) * 1e-3f);
  std::vector<float> g(grid.size()), gr(grid.size());
  gelu_forward(grid.data(), g.data(), grid.size());
  reference::gelu_forward(grid.data(), gr.data(), grid.size());
  double worst = 0;
  for (std::size_t i = 0; i < grid.size(); ++i)
    worst = std::max(worst, std::fabs(double(g[i]) - double(gr[i])) / std::max(1.0, std::fabs(double(grid[i]))));
  EXPECT_LT(worst, 1e-6) << "largest error relative to max(1, |x|) on the grid: " << worst;
}

TEST(Losses, MseAndSoftmaxCrossEntropyMatchReference) {
  const auto y = random(300, 7), t = random(300, 8);
  std::vector<float> dy(300), dyr(300);
  const float l = mse_loss(y.data(), t.data(), dy.data(), 300),
              lr = reference::mse_loss(y.data(), t.data(), dyr.data(), 300);
  EXPECT_NEAR(l, lr, 1e-5 * lr);
  EXPECT_LT(max_rel_error(dy, dyr), 1e-5);
  const int B = 6, C = 10;
  auto z = random(std::size_t(B * C), 9, 3.0f);
  z[0] = 80.0f;  // large logits must not overflow
  const std::vector<int> labels{0, 3, 9, 1, 1, 5};
  std::vector<float> dz(z.size()), dzr(z.size());
  const float ce = softmax_cross_entropy(z.data(), labels.data(), dz.data(), B, C);
  const float cer = reference::softmax_cross_entropy(z.data(), labels.data(), dzr.data(), B, C);
  EXPECT_TRUE(std::isfinite(ce));
  EXPECT_NEAR(ce, cer, 1e-5 * std::fabs(cer) + 1e-6);
  EXPECT_LT(max_rel_error(dz, dzr), 1e-5) << max_rel_error(dz, dzr);
}

TEST(Optimizers, AdamWMatchesReferenceOverSeveralSteps) {
  const AdamWConfig c{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f};
  auto w = random(500, 10), wr = w;
  std::vector<float> m(500, 0), v(500, 0), mr(500, 0), vr(500, 0);
  for (int t = 1; t <= 10; ++t) {
    const auto g = random(500, 100u + unsigned(t));
    adamw_step(w.data(), g.data(), m.data(), v.data(), 500, c, t);
    reference::adamw_step(wr.data(), g.data(), mr.data(), vr.data(), 500, c, t);
  }
  EXPECT_LT(max_rel_error(w, wr), 1e-5) << max_rel_error(w, wr);
  std::vector<float> s{1, 2}, g{0.5f, -1};
  sgd_step(s.data(), g.data(), 2, 0.1f);
  EXPECT_FLOAT_EQ(s[0], 0.95f);
  EXPECT_FLOAT_EQ(s[1], 2.1f);
}

// Mixed precision: 16-bit gradients (loss-scaled) update the fp32 master like the float64
// reference AdamW on the widened, unscaled gradients; the 16-bit weights are the master
// rounded. An inf gradient skips the step and leaves everything as it was.
TEST(Optimizers, MixedPrecisionAdamWUpdatesTheMasterAndRoundsTheWeights) {
  const AdamWConfig c{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f};
  for (dtl::DType t : {dtl::DType::bf16, dtl::DType::f16}) {
    const std::size_t n = 5000;  // more than one 4096-element block
    const float scale = 1024.0f;
    auto master = random(n, 11), ref = master;
    std::vector<std::uint16_t> params(n), grads(n);
    std::vector<float> m(n, 0), v(n, 0), mr(n, 0), vr(n, 0), g(n), widened(n);
    for (int step = 1; step <= 5; ++step) {
      g = random(n, 200u + unsigned(step), scale);  // the scaled gradients, rounded to 16 bits
      dtl::from_float(g.data(), grads.data(), t, n);
      dtl::to_float(grads.data(), t, widened.data(), n);
      for (auto& x : widened) x /= scale;
      ASSERT_TRUE(adamw_step_mixed(master.data(), grads.data(), params.data(), t, m.data(), v.data(), n, c, step,
                                   1.0f / scale));
      reference::adamw_step(ref.data(), widened.data(), mr.data(), vr.data(), n, c, step);
    }
    EXPECT_LT(max_rel_error(master, ref), 1e-5) << dtl::dtype_name(t) << ": " << max_rel_error(master, ref);
    std::vector<float> weights(n);
    dtl::to_float(params.data(), t, weights.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t rounded = 0;
      dtl::from_float(&master[i], &rounded, t, 1);
      ASSERT_EQ(params[i], rounded) << "weight " << i << " is not the master rounded";
    }
    // Overflow: nothing moves.
    const auto before = master;
    grads[4321] = t == dtl::DType::bf16 ? dtl::float_to_bf16(INFINITY) : dtl::float_to_f16(INFINITY);
    EXPECT_FALSE(
        adamw_step_mixed(master.data(), grads.data(), params.data(), t, m.data(), v.data(), n, c, 6, 1.0f / scale));
    EXPECT_EQ(master, before);
  }
}
