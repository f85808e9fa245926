// Activation recomputation in the GPT (labs/train/gpt.h, gpt_activations.cpp): the loss and
// every gradient bit for bit equal to keeping everything — one rank, tensor parallel, sequence
// parallel, mixed precision, pipeline stages with several micro-batches in flight — and the
// memory each mode holds, as the tracker counts it, against gpt_activation_parts and against
// numbers worked by hand.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "labs/train/gpt.h"
#include "tests/labs/gpt_test_util.h"
#include "tests/test_util.h"

using namespace dtl;
using theory::Recompute;

namespace {

const GptConfig kConfig{.vocab = 16, .seq = 8, .hidden = 16, .heads = 4, .layers = 3, .batch = 2};
const GptInit kInit{.std = 0.2f, .perturb_all = true};
constexpr Recompute kModes[] = {Recompute::none, Recompute::selective, Recompute::full};

// The gradient buffer's bytes, as stored (16-bit in mixed precision), and the loss.
struct Step {
  float loss = 0;
  std::vector<unsigned char> grads;
};

std::vector<unsigned char> bytes_of(const Gpt& model) {
  const std::size_t n = model.num_params() * dtype_size(model.precision());
  std::vector<unsigned char> b(n);
  std::memcpy(b.data(), const_cast<Gpt&>(model).whole_params().grads, n);
  return b;
}

// Two forward_backward calls (the second on another batch, so a stale buffer would show).
Step whole_model_step(Comm& comm, ex::TpMode mode, DType precision, Recompute r) {
  const std::vector<int> tokens = test::random_tokens(kConfig.rows(), kConfig.vocab, 11);
  const std::vector<int> targets = test::random_tokens(kConfig.rows(), kConfig.vocab, 12);
  const std::vector<int> tokens2 = test::random_tokens(kConfig.rows(), kConfig.vocab, 13);
  MemoryTracker mem(comm.rank(), nullptr);
  Gpt model(kConfig, ex::TpGroup{comm, mode}, mem, 5, Device::cpu(), kInit, precision);
  model.set_recompute(r);
  model.forward_backward(tokens.data(), targets.data());
  Step s;
  s.loss = model.forward_backward(tokens2.data(), targets.data());
  s.grads = bytes_of(model);
  return s;
}

std::size_t differing_bytes(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  std::size_t n = a.size() == b.size() ? 0 : std::max(a.size(), b.size());
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace

TEST(GptRecompute, GradientsEqualKeepingEverythingBitForBit) {
  struct Case {
    int T;
    ex::TpMode mode;
    DType precision;
  };
  for (const Case c : {Case{1, ex::TpMode::plain, DType::f32}, Case{2, ex::TpMode::plain, DType::f32},
                       Case{2, ex::TpMode::sequence_parallel, DType::f32}, Case{1, ex::TpMode::plain, DType::bf16},
                       Case{2, ex::TpMode::sequence_parallel, DType::f16}}) {
    std::vector<Step> by_mode;
    for (Recompute r : kModes) {
      std::vector<Step> ranks(std::size_t(c.T));
      test::run_ranks(
          c.T, [&](Comm& comm) { ranks[std::size_t(comm.rank())] = whole_model_step(comm, c.mode, c.precision, r); });
      by_mode.push_back(ranks[std::size_t(c.T - 1)]);  // the last rank's slice
    }
    for (std::size_t m = 1; m < by_mode.size(); ++m) {
      const std::size_t diff = differing_bytes(by_mode[m].grads, by_mode[0].grads);
      std::printf("T=%d %s %s, recompute %-9s: loss %.8f vs %.8f, gradient bytes differing %zu of %zu\n", c.T,
                  c.mode == ex::TpMode::sequence_parallel ? "sp" : "plain",
                  std::string(dtype_name(c.precision)).c_str(), theory::recompute_name(kModes[m]),
                  double(by_mode[m].loss), double(by_mode[0].loss), diff, by_mode[0].grads.size());
      EXPECT_EQ(std::memcmp(&by_mode[m].loss, &by_mode[0].loss, sizeof(float)), 0);
      EXPECT_EQ(diff, 0u);
      EXPECT_FALSE(by_mode[0].grads.empty());
    }
  }
}

namespace {

// Two pipeline stages in one process (no pp group: stage 1's input is stage 0's output,
// handed over by hand), two micro-batches in flight, GPipe order; the stages' gradients.
std::vector<unsigned char> two_stage_pipeline(Recompute r, double* peak0, double* predicted0) {
  std::vector<unsigned char> grads;
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem0(0, nullptr), mem1(0, nullptr);
    Gpt first(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem0, 5, Device::cpu(), kInit, DType::f32,
              {0, 1, true, false});
    Gpt last(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem1, 5, Device::cpu(), kInit, DType::f32,
             {2, 2, false, true});
    first.set_recompute(r), last.set_recompute(r);
    first.zero_grads(), last.zero_grads();
    std::vector<GptActivations> a0, a1;
    std::vector<std::vector<int>> tokens, targets;
    for (int m = 0; m < 2; ++m) {
      tokens.push_back(test::random_tokens(kConfig.rows(), kConfig.vocab, 20 + unsigned(m)));
      targets.push_back(test::random_tokens(kConfig.rows(), kConfig.vocab, 30 + unsigned(m)));
      a0.push_back(first.make_activations()), a1.push_back(last.make_activations());
      float loss = 0;
      const float* y = first.forward_stage(tokens.back().data(), nullptr, nullptr, a0.back(), &loss, 1.0f);
      last.forward_stage(nullptr, y, targets.back().data(), a1.back(), &loss, 0.5f);
    }
    for (int m = 1; m >= 0; --m) {
      const float* dx = last.backward_stage(nullptr, nullptr, a1[std::size_t(m)]);
      first.backward_stage(tokens[std::size_t(m)].data(), dx, a0[std::size_t(m)]);
    }
    EXPECT_EQ(mem0.current(MemTag::activation), 0u) << "every micro-batch's activations given back";
    *peak0 = double(mem0.peak(MemTag::activation));
    *predicted0 = gpt_activation_parts(kConfig, 1, ex::TpMode::plain, first.span(), r).peak(2);
    grads = bytes_of(first);
    const std::vector<unsigned char> g1 = bytes_of(last);
    grads.insert(grads.end(), g1.begin(), g1.end());
  });
  return grads;
}

}  // namespace

TEST(GptRecompute, PipelineStagesWithMicroBatchesInFlight) {
  double peak = 0, predicted = 0;
  const std::vector<unsigned char> keep = two_stage_pipeline(Recompute::none, &peak, &predicted);
  EXPECT_EQ(peak, predicted);
  for (Recompute r : {Recompute::selective, Recompute::full}) {
    const std::vector<unsigned char> again = two_stage_pipeline(r, &peak, &predicted);
    std::printf(
        "two stages, 2 micro-batches in flight, recompute %-9s: gradient bytes differing %zu; stage 0's "
        "activation peak %.0f B, formula %.0f B\n",
        theory::recompute_name(r), differing_bytes(again, keep), peak, predicted);
    EXPECT_EQ(differing_bytes(again, keep), 0u);
    EXPECT_EQ(peak, predicted);
  }
}

// The formula against a configuration worked by hand: S 4, B 2, h 8, A 2, V 16, one rank, so
// R = Rl = 8 rows. Floats: input 64; ln_1 out, residual, ln_2 out 3·64 = 192; LayerNorm
// statistics 4·8 = 32; q, k, v, attention out, c_fc out, GELU out 12·64 = 768; softmax
// B·A·S² = 2·2·16 = 64; the end: output 64 + ln_f out 64 + statistics 16 + logits and their
// gradient 2·8·16 = 256, 400.
TEST(GptRecompute, ActivationFormulaWorkedByHand) {
  const GptConfig c{.vocab = 16, .seq = 4, .hidden = 8, .heads = 2, .layers = 2, .batch = 2};
  const GptActivationBytes none = gpt_activation_parts(c, 1, ex::TpMode::plain, {}, Recompute::none);
  EXPECT_EQ(none.block, 4.0 * (64 + 192 + 32 + 768 + 64));
  EXPECT_EQ(none.end, 4.0 * 400);
  EXPECT_EQ(none.recomputed, 0.0);
  EXPECT_EQ(none.peak(1), 2 * 4480.0 + 1600.0);
  const GptActivationBytes selective = gpt_activation_parts(c, 1, ex::TpMode::plain, {}, Recompute::selective);
  EXPECT_EQ(selective.block, 4.0 * (64 + 192 + 32 + 768));
  EXPECT_EQ(selective.recomputed, 4.0 * (64 + 64));  // the softmax and the attention output again
  const GptActivationBytes full = gpt_activation_parts(c, 1, ex::TpMode::plain, {}, Recompute::full);
  EXPECT_EQ(full.block, 4.0 * 64);
  EXPECT_EQ(full.recomputed, 4.0 * (192 + 32 + 768 + 64));
  // Its running set (4224 B) exceeds the end (1600 B): the peak is every block's input plus
  // the last block's running set, before the end exists.
  EXPECT_EQ(full.peak(1), 2 * 256.0 + 4224.0);
}

TEST(GptRecompute, TrackerCountsEqualTheFormulaInEveryMode) {
  for (ex::TpMode mode : {ex::TpMode::plain, ex::TpMode::sequence_parallel})
    for (Recompute r : kModes)
      test::run_ranks(2, [&](Comm& comm) {
        const std::vector<int> tokens = test::random_tokens(kConfig.rows(), kConfig.vocab, 11);
        MemoryTracker mem(comm.rank(), nullptr);
        Gpt model(kConfig, ex::TpGroup{comm, mode}, mem, 5, Device::cpu(), kInit);
        model.set_recompute(r);
        model.forward_backward(tokens.data(), tokens.data());
        const GptActivationBytes p = gpt_activation_parts(kConfig, 2, mode, {}, r);
        const GptActivationMeasure& m = model.activation_measure();
        if (comm.rank() == 0)
          std::printf(
              "T=2 %s recompute %-9s: per block %.0f B (formula %.0f), running %.0f (%.0f), end %.0f (%.0f), "
              "peak %zu (%.0f)\n",
              mode == ex::TpMode::plain ? "plain" : "sp", theory::recompute_name(r), m.block[0], p.block, m.recomputed,
              p.recomputed, m.end, p.end, mem.peak(MemTag::activation), p.peak(1));
        for (double b : m.block) EXPECT_EQ(b, p.block);
        EXPECT_EQ(m.recomputed, p.recomputed);
        EXPECT_EQ(m.end, p.end);
        EXPECT_EQ(double(mem.peak(MemTag::activation)), p.peak(1));
        EXPECT_EQ(mem.current(MemTag::activation), 0u) << "backward gives every activation back";
        if (r == Recompute::full) { EXPECT_EQ(m.recomputed_blocks, kConfig.layers); }
      });
}

namespace {
struct NoMlp final : GptMlpOverride {
  void forward(int, const float*, float*) override {}
  void backward(int, const float*, float*) override {}
};
}  // namespace

TEST(GptRecompute, FullRecomputationRefusesAReplacedMlp) {
  test::run_ranks(1, [&](Comm& comm) {
    MemoryTracker mem(0, nullptr);
    Gpt model(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 5);
    NoMlp mlp;
    model.set_mlp_override(&mlp);
    EXPECT_THROW(model.set_recompute(Recompute::full), UsageError);
    EXPECT_NO_THROW(model.set_recompute(Recompute::selective));
  });
}
