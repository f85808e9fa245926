// The GPT in mixed precision (labs/train/gpt.h, "Precision"): bf16/fp16 parameters and
// gradients, fp32 compute and fp32 master weights. The reference is the fp32 GPT — checked
// against finite differences and PyTorch elsewhere — loaded with the mixed model's own
// 16-bit weights, so the only differences left are the gradients' one rounding (and, under
// sequence parallelism, the 16-bit all-reduce of the LayerNorm gradients).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "labs/train/gpt.h"
#include "labs/train/optimizer.h"
#include "tests/labs/gpt_test_util.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {

const GptConfig kConfig{.vocab = 16, .seq = 8, .hidden = 16, .heads = 4, .layers = 2, .batch = 2};
const GptInit kInit{.std = 0.2f, .perturb_all = true};
using test::Named;
using test::worst_relative;

struct Result {
  float loss = 0;
  Named params, grads;
};

const std::vector<int>& tokens() {
  static const std::vector<int> t = test::random_tokens(kConfig.rows(), kConfig.vocab, 21);
  return t;
}
const std::vector<int>& targets() {
  static const std::vector<int> t = test::random_tokens(kConfig.rows(), kConfig.vocab, 22);
  return t;
}

// One forward_backward of the mixed model on T ranks; the gradients divided by the loss scale.
Result run_mixed(DType precision, int T, ex::TpMode mode, float loss_scale) {
  Result r;
  test::run_ranks(T, [&](Comm& comm) {
    MemoryTracker mem(comm.rank(), nullptr);
    Gpt model(kConfig, ex::TpGroup{comm, mode}, mem, 7, Device::cpu(), kInit, precision);
    const float loss = model.forward_backward(tokens().data(), targets().data(), loss_scale);
    Named params, grads;
    for (const GptTensor& t : model.tensors()) {
      params[t.name] = model.full_tensor(t.name);
      grads[t.name] = model.full_tensor(t.name, GptBuffer::grads);
      for (float& g : grads[t.name]) g /= loss_scale;
    }
    if (comm.rank() == 0) r = {loss, std::move(params), std::move(grads)};
  });
  return r;
}

// The fp32 GPT on one rank with the given weights.
Result run_fp32(const Named& weights) {
  Result r;
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(0, nullptr);
    Gpt model(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 7, Device::cpu(), kInit);
    for (const auto& [name, values] : weights) model.set_full_tensor(name, values);
    r.loss = model.forward_backward(tokens().data(), targets().data());
    for (const GptTensor& t : model.tensors()) r.grads[t.name] = model.full_tensor(t.name, GptBuffer::grads);
  });
  return r;
}

// The unit roundoff u of the 16-bit type (2^-8 for bf16's 8-bit significand, 2^-11 for
// fp16's 11): a gradient rounded once is within u/2 of its fp32 value; the SP all-reduce
// rounds partial sums up to three more times. 4u leaves room for both.
double gradient_tolerance(DType t) { return 4.0 * std::ldexp(1.0, t == DType::bf16 ? -8 : -11); }

}  // namespace

TEST(GptMixedPrecision, GradientsAreTheFp32GradientsRoundedOnce) {
  struct Case {
    DType precision;
    int T;
    ex::TpMode mode;
  };
  const Case cases[] = {{DType::bf16, 1, ex::TpMode::plain},
                        {DType::bf16, 2, ex::TpMode::plain},
                        {DType::bf16, 2, ex::TpMode::sequence_parallel},
                        {DType::f16, 1, ex::TpMode::plain},
                        {DType::f16, 2, ex::TpMode::sequence_parallel}};
  for (const Case& c : cases) {
    // fp16 with a loss scale of 2^10, as LossScaler would start lower: the division must undo it.
    const float scale = c.precision == DType::f16 ? 1024.0f : 1.0f;
    const Result mixed = run_mixed(c.precision, c.T, c.mode, scale);
    const Result ref = run_fp32(mixed.params);
    std::string worst_name;
    const double worst = worst_relative(mixed.grads, ref.grads, worst_name);
    const double loss_diff = std::fabs(double(mixed.loss) - double(ref.loss));
    std::printf("%s T=%d %s: loss %.7f vs fp32 %.7f (|diff| %.2e), worst gradient %.2e (%s), bound %.2e\n",
                c.precision == DType::bf16 ? "bf16" : "fp16", c.T,
                c.mode == ex::TpMode::sequence_parallel ? "SP" : "plain", double(mixed.loss), double(ref.loss),
                loss_diff, worst, worst_name.c_str(), gradient_tolerance(c.precision));
    // The forward computes in fp32 on the same weights: only summation order may differ.
    EXPECT_LT(loss_diff, 1e-5);
    EXPECT_LT(worst, gradient_tolerance(c.precision)) << worst_name;
    // And the gradients are not all zero (a model that skipped its narrowing would pass the above).
    double largest = 0;
    for (const auto& [name, g] : mixed.grads)
      for (float v : g) largest = std::max(largest, double(std::fabs(v)));
    EXPECT_GT(largest, 1e-3);
  }
}

TEST(GptMixedPrecision, Bf16TrainingFollowsFp32AndKeepsSixteenBytesPerParameter) {
  constexpr int kSteps = 30;
  std::size_t params = 0;
  const auto train = [&](DType precision, std::vector<float>& losses, MemoryTracker& mem) {
    test::run_ranks(1, [&](Comm& comm) {
      Gpt model(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 7, Device::cpu(), kInit, precision);
      params = model.num_params();
      AdamW opt(model.whole_params(), Device::cpu(), mem, kernels::AdamWConfig{.lr = 1e-2f, .eps = 1e-5f});
      for (int step = 0; step < kSteps; ++step) {
        losses.push_back(model.forward_backward(tokens().data(), targets().data()));
        opt.step(model.whole_params());
      }
    });
  };
  std::vector<float> fp32, bf16;
  MemoryTracker mem32(0, nullptr), mem16(0, nullptr);
  train(DType::f32, fp32, mem32);
  train(DType::bf16, bf16, mem16);
  // Measured against the starting loss: near the end both approach 0 on this one batch, where
  // a relative difference of the two small numbers says nothing.
  double worst = 0;
  for (std::size_t i = 0; i < fp32.size(); ++i) {
    worst = std::max(worst, std::fabs(double(bf16[i]) - double(fp32[i])) / double(fp32.front()));
    std::printf("%s%.3f/%.3f", i ? " " : "losses fp32/bf16: ", double(fp32[i]), double(bf16[i]));
  }
  std::printf("\nloss step 1 → %d: fp32 %.4f → %.4f, bf16 %.4f → %.4f; largest difference / first loss %.2e\n", kSteps,
              double(fp32.front()), double(fp32.back()), double(bf16.front()), double(bf16.back()), worst);
  EXPECT_LT(fp32.back(), 0.5f * fp32.front());  // it learns the one batch
  EXPECT_LT(worst, 0.01);

  // Model state: 2 + 2 + 12 bytes per parameter (master, m, v in fp32), against 4 + 4 + 8.
  const double n = double(params);
  const double bf16_state = double(mem16.peak(MemTag::param) + mem16.peak(MemTag::grad) +
                                   mem16.peak(MemTag::optimizer) + mem16.peak(MemTag::master));
  std::printf("bf16: params %zu B, grads %zu B, master %zu B, m+v %zu B for %.0f parameters\n",
              mem16.peak(MemTag::param), mem16.peak(MemTag::grad), mem16.peak(MemTag::master),
              mem16.peak(MemTag::optimizer), n);
  EXPECT_EQ(double(mem16.peak(MemTag::param)), 2 * n);
  EXPECT_EQ(double(mem16.peak(MemTag::grad)), 2 * n);
  EXPECT_EQ(double(mem16.peak(MemTag::master)), 4 * n);
  EXPECT_EQ(bf16_state, 16 * n);
  EXPECT_EQ(double(mem32.peak(MemTag::param)), 4 * n);
}

TEST(GptMixedPrecision, FloatAccessorsRefuseSixteenBitBuffers) {
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(0, nullptr);
    Gpt model(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 7, Device::cpu(), kInit, DType::bf16);
    EXPECT_THROW(model.params(), Error);
    EXPECT_THROW(model.grads(), Error);
    EXPECT_EQ(model.whole_params().dtype, DType::bf16);
  });
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(0, nullptr);
    EXPECT_THROW(Gpt(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 7, Device::cpu(), kInit, DType::i32),
                 UsageError);
  });
}
