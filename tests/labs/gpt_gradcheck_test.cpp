// The GPT (labs/train/gpt.h) on one rank against an independent float64 model
// (gpt_reference.h): the loss, and every parameter element's analytic fp32 gradient
// against central finite differences of the float64 loss. The transformer kernels'
// fast paths against their float64 twins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/comm/threads_backend.h"
#include "kernels/cpu/transformer_kernels.h"
#include "labs/train/gpt.h"
#include "tests/labs/gpt_reference.h"
#include "tests/labs/gpt_test_util.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {

using dtl::test::random_tokens;

std::vector<float> random_floats(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Largest |a − b| over the largest |b|: the error relative to the tensor's scale.
double relative_error(const std::vector<float>& a, const std::vector<double>& b) {
  double diff = 0, scale = 1e-12;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}

}  // namespace

TEST(GptGradcheck, LossAndEveryGradientMatchFloat64FiniteDifferences) {
  const GptConfig c{.vocab = 13, .seq = 6, .hidden = 8, .heads = 2, .layers = 2, .batch = 2};
  const std::vector<int> tokens = random_tokens(c.rows(), c.vocab, 1), targets = random_tokens(c.rows(), c.vocab, 2);
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(0, nullptr);
    Gpt model(c, ex::TpGroup{comm}, mem, 7, Device::cpu(), GptInit{.std = 0.3f, .perturb_all = true});
    const float loss = model.forward_backward(tokens.data(), targets.data());

    test::GptTensors p;
    for (const GptTensor& t : model.tensors()) {
      const std::vector<float> v = model.full_tensor(t.name);
      p[t.name] = std::vector<double>(v.begin(), v.end());
    }
    const double ref_loss = test::gpt_reference_loss(c, p, tokens, targets);
    std::printf("loss: dtlab fp32 %.8f, float64 reference %.8f, difference %.2e\n", loss, ref_loss,
                std::fabs(loss - ref_loss));
    EXPECT_NEAR(loss, ref_loss, 1e-5 * std::fabs(ref_loss));

    double worst = 0;
    for (const GptTensor& t : model.tensors()) {
      std::vector<double>& w = p[t.name];
      std::vector<double> fd(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) {  // central differences, step 1e-6, all in double
        const double keep = w[i], step = 1e-6;
        w[i] = keep + step;
        const double up = test::gpt_reference_loss(c, p, tokens, targets);
        w[i] = keep - step;
        const double down = test::gpt_reference_loss(c, p, tokens, targets);
        w[i] = keep;
        fd[i] = (up - down) / (2 * step);
      }
      const double err = relative_error(model.full_tensor(t.name, GptBuffer::grads), fd);
      std::printf("  %-24s %4zu elements, gradient relative error %.2e\n", t.name.c_str(), w.size(), err);
      EXPECT_LT(err, 1e-3) << t.name;
      worst = std::max(worst, err);
    }
    std::printf("largest gradient relative error over all tensors: %.2e\n", worst);
  });
}

TEST(GptGradcheck, ForwardAloneGivesTheSameLoss) {
  const GptConfig c{.vocab = 13, .seq = 6, .hidden = 8, .heads = 2, .layers = 2, .batch = 2};
  const std::vector<int> tokens = random_tokens(c.rows(), c.vocab, 3), targets = random_tokens(c.rows(), c.vocab, 4);
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(0, nullptr);
    Gpt model(c, ex::TpGroup{comm}, mem, 7);
    EXPECT_EQ(model.forward(tokens.data(), targets.data()), model.forward_backward(tokens.data(), targets.data()));
    // Initial loss of a GPT-2 initialization is close to ln V: the logits are nearly uniform.
    EXPECT_NEAR(model.forward(tokens.data(), targets.data()), std::log(double(c.vocab)), 0.1);
  });
}

TEST(GptConfigCheck, NamesTheBrokenConstraint) {
  const GptConfig c{.vocab = 15, .seq = 6, .hidden = 12, .heads = 3, .layers = 1, .batch = 2};
  EXPECT_EQ(gpt_config_problem(c, 1, ex::TpMode::plain), "");
  EXPECT_NE(gpt_config_problem(c, 2, ex::TpMode::plain).find("heads 3"), std::string::npos);
  EXPECT_NE(gpt_config_problem(c, 4, ex::TpMode::plain).find("exceeds"), std::string::npos);
  EXPECT_NE(
      gpt_config_problem({.vocab = 15, .seq = 6, .hidden = 10, .heads = 3}, 1, ex::TpMode::plain).find("hidden 10"),
      std::string::npos);
  EXPECT_EQ(gpt_config_problem(c, 3, ex::TpMode::sequence_parallel), "");  // 3 heads, 4h = 48, V = 15, S = 6
  EXPECT_NE(gpt_config_problem({.vocab = 16, .seq = 6, .hidden = 16, .heads = 4}, 4, ex::TpMode::sequence_parallel)
                .find("seq 6"),
            std::string::npos);
  EXPECT_NE(
      gpt_config_problem({.vocab = 10, .seq = 8, .hidden = 16, .heads = 4}, 4, ex::TpMode::plain).find("vocab 10"),
      std::string::npos);
}

TEST(TransformerKernels, FastPathsMatchFloat64Twins) {
  const int rows = 12, width = 8;
  const std::vector<float> x = random_floats(rows * width, 5), w = random_floats(width, 6), b = random_floats(width, 7);
  const std::vector<float> dy = random_floats(rows * width, 8);
  std::vector<float> y(x.size()), y_ref(x.size()), mean(rows), rstd(rows);
  kernels::layernorm_forward(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, width, 1e-5f);
  kernels::reference::layernorm_forward(x.data(), w.data(), b.data(), y_ref.data(), rows, width, 1e-5f);
  std::vector<float> dx(x.size()), dw(width), db(width), dx_ref(x.size()), dw_ref(width), db_ref(width);
  kernels::layernorm_backward(x.data(), w.data(), mean.data(), rstd.data(), dy.data(), dx.data(), dw.data(), db.data(),
                              rows, width);
  kernels::reference::layernorm_backward(x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data(),
                                         rows, width, 1e-5f);
  const auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    return d;
  };
  std::printf("layernorm: y %.2e, dx %.2e, dw %.2e, db %.2e\n", max_diff(y, y_ref), max_diff(dx, dx_ref),
              max_diff(dw, dw_ref), max_diff(db, db_ref));
  EXPECT_LT(max_diff(y, y_ref), 1e-5);
  EXPECT_LT(max_diff(dx, dx_ref), 1e-4);
  EXPECT_LT(max_diff(dw, dw_ref), 1e-5);
  EXPECT_LT(max_diff(db, db_ref), 1e-5);

  const kernels::AttentionShape s{.seq = 5, .batch = 3, .heads = 2, .head_dim = 4};
  const std::size_t n_rows = std::size_t(s.seq * s.batch), hd = std::size_t(s.heads * s.head_dim);
  const std::vector<float> qkv = random_floats(n_rows * 3 * hd, 9), dout = random_floats(n_rows * hd, 10);
  std::vector<float> out(n_rows * hd), out_ref(out.size()), probs(std::size_t(s.batch * s.heads * s.seq * s.seq));
  std::vector<float> dqkv(qkv.size()), dqkv_ref(qkv.size());
  kernels::attention_forward(qkv.data(), out.data(), probs.data(), s);
  kernels::reference::attention_forward(qkv.data(), out_ref.data(), s);
  kernels::attention_backward(qkv.data(), probs.data(), dout.data(), dqkv.data(), s);
  kernels::reference::attention_backward(qkv.data(), dout.data(), dqkv_ref.data(), s);
  std::printf("attention: out %.2e, dqkv %.2e\n", max_diff(out, out_ref), max_diff(dqkv, dqkv_ref));
  EXPECT_LT(max_diff(out, out_ref), 1e-5);
  EXPECT_LT(max_diff(dqkv, dqkv_ref), 1e-4);
}
