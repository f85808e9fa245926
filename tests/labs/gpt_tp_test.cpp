// The tensor-parallel GPT (labs/train/gpt.h) on T = 1, 2, 4 thread ranks, with and
// without sequence parallelism, against the single-rank model: the loss, every full
// gradient, and the weights after three AdamW steps; the collectives one step issues;
// the activation memory against its prediction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/comm/threads_backend.h"
#include "core/trace/trace.h"
#include "labs/train/gpt.h"
#include "labs/train/optimizer.h"
#include "tests/labs/gpt_test_util.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {

const GptConfig kConfig{.vocab = 16, .seq = 8, .hidden = 16, .heads = 4, .layers = 2, .batch = 2};
const GptInit kInit{.std = 0.2f, .perturb_all = true};

using dtl::test::random_tokens;

using test::Named;
using test::worst_relative;

struct TpRun {
  float loss = 0;
  Named grads, params_after_steps;
};

// One forward_backward, then three AdamW steps (each followed by a new forward_backward).
TpRun run(int T, ex::TpMode mode) {
  const std::vector<int> tokens = random_tokens(kConfig.rows(), kConfig.vocab, 11);
  const std::vector<int> targets = random_tokens(kConfig.rows(), kConfig.vocab, 12);
  TpRun result;
  test::run_ranks(T, [&](Comm& comm) {
    MemoryTracker mem(comm.rank(), nullptr);
    Gpt model(kConfig, ex::TpGroup{comm, mode}, mem, 5, Device::cpu(), kInit);
    const float loss = model.forward_backward(tokens.data(), targets.data());
    Named grads, params;
    for (const GptTensor& t : model.tensors()) grads[t.name] = model.full_tensor(t.name, GptBuffer::grads);
    // eps 1e-5, not 1e-8: the K bias's gradient is exactly 0 in exact arithmetic (softmax
    // ignores a shift of all of a query's scores, and q·b_K is one), so what it holds is
    // rounding noise (~1e-9) that differs with T; Adam divides by √v and would turn that
    // noise into whole lr-sized steps. A larger eps keeps the comparison about parallelism.
    AdamW opt(model.whole_params(), Device::cpu(), mem,
              kernels::AdamWConfig{.lr = 1e-2f, .eps = 1e-5f, .weight_decay = 0.1f});
    for (int step = 0; step < 3; ++step) {
      opt.step(model.whole_params());
      model.forward_backward(tokens.data(), targets.data());
    }
    for (const GptTensor& t : model.tensors()) params[t.name] = model.full_tensor(t.name);
    if (comm.rank() == 0) result = {loss, std::move(grads), std::move(params)};
  });
  return result;
}

const char* mode_name(ex::TpMode m) { return m == ex::TpMode::sequence_parallel ? "sequence-parallel" : "plain"; }

}  // namespace

TEST(GptTensorParallel, LossGradientsAndAdamWStepsEqualTheSingleRankModel) {
  const TpRun single = run(1, ex::TpMode::plain);
  for (ex::TpMode mode : {ex::TpMode::plain, ex::TpMode::sequence_parallel})
    for (int T : {1, 2, 4}) {
      const TpRun tp = run(T, mode);
      std::string g_name, p_name;
      const double g_err = worst_relative(tp.grads, single.grads, g_name);
      const double p_err = worst_relative(tp.params_after_steps, single.params_after_steps, p_name);
      std::printf(
          "T=%d %-17s loss %.7f vs %.7f | gradients: max relative diff %.2e (%s) | weights after 3 AdamW "
          "steps: %.2e (%s)\n",
          T, mode_name(mode), tp.loss, single.loss, g_err, g_name.c_str(), p_err, p_name.c_str());
      EXPECT_NEAR(tp.loss, single.loss, 1e-5 * single.loss) << "T=" << T << " " << mode_name(mode);
      double k_bias_grad = 0;  // rows [h, 2h) of c_attn's bias: the K bias (see run())
      for (int i = kConfig.hidden; i < 2 * kConfig.hidden; ++i)
        k_bias_grad = std::max(k_bias_grad, std::fabs(double(tp.grads.at("h.0.attn.c_attn.bias")[std::size_t(i)])));
      EXPECT_LT(k_bias_grad, 1e-6);
      EXPECT_LT(g_err, 1e-5) << "T=" << T << " " << mode_name(mode) << ", worst tensor " << g_name;
      // Adam divides each gradient by its own √v: an element with a small gradient turns the
      // ~1e-7 relative rounding difference of the gradients into up to ~1e-5 of the lr-sized
      // step (3 steps of 1e-2 move a weight ~3e-2). 1e-4 of the weights' scale still fails
      // on any real error (a bias added twice, a missed all-reduce: ~1e-2 and more).
      EXPECT_LT(p_err, 1e-4) << "T=" << T << " " << mode_name(mode) << ", worst tensor " << p_name;
    }
}

namespace {
// The collectives rank 0 issued during one forward_backward, by name.
std::map<std::string, std::vector<std::uint64_t>> collectives_of_one_step(int T, ex::TpMode mode) {
  const std::vector<int> tokens = random_tokens(kConfig.rows(), kConfig.vocab, 13);
  Trace trace(T);
  test::run_ranks(
      T,
      [&](Comm& comm) {
        MemoryTracker mem(comm.rank(), nullptr);
        Gpt model(kConfig, ex::TpGroup{comm, mode}, mem, 5);
        model.forward_backward(tokens.data(), tokens.data());
      },
      &trace);
  std::map<std::string, std::vector<std::uint64_t>> by_name;
  const EventLog& log = trace.log(0, kStreamComm);
  for (std::size_t i = 0; i < log.size(); ++i)
    if (log[i].kind == EventKind::collective) by_name[trace.label_name(log[i].label)].push_back(log[i].bytes);
  return by_name;
}

// Every element equal to `bytes`, and how many there are.
int count_of_size(const std::vector<std::uint64_t>& sizes, std::uint64_t bytes) {
  return int(std::count(sizes.begin(), sizes.end(), bytes));
}
}  // namespace

TEST(GptTensorParallel, OneStepIssuesMegatronsCollectives) {
  const int L = kConfig.layers;
  const std::uint64_t activation = std::uint64_t(kConfig.rows()) * std::uint64_t(kConfig.hidden) * 4;  // rows·h floats
  const std::uint64_t per_row = std::uint64_t(kConfig.rows()) * 4;  // cross-entropy's max, Σexp, target logit

  EXPECT_TRUE(collectives_of_one_step(1, ex::TpMode::plain).empty()) << "T = 1 must not communicate";
  EXPECT_TRUE(collectives_of_one_step(1, ex::TpMode::sequence_parallel).empty()) << "T = 1 must not communicate";

  // Plain: per block 2 all-reduces forward (g) and 2 backward (f); plus the embedding's g
  // and the LM head's f; the vocab-parallel cross-entropy's 3 small all-reduces.
  auto plain = collectives_of_one_step(2, ex::TpMode::plain);
  const auto& ar = plain["all_reduce"];
  std::printf("plain T=2: %zu all-reduces (%d of rows·h floats), nothing else: %s\n", ar.size(),
              count_of_size(ar, activation), plain.size() == 1 ? "yes" : "no");
  EXPECT_EQ(plain.size(), 1u);
  EXPECT_EQ(count_of_size(ar, activation), 4 * L + 2);
  EXPECT_EQ(count_of_size(ar, per_row), 3);
  EXPECT_EQ(int(ar.size()), 4 * L + 5);

  // Sequence parallel: forward per block 2 all-gathers (f) + 2 reduce-scatters (g); backward
  // 2 all-gathers (g's backward) + 2 re-gathers of the LayerNorm outputs + 2 reduce-scatters
  // (f's backward); the embedding's reduce-scatter and all-gather, the LM head's all-gather
  // and reduce-scatter; all-reduces: the cross-entropy's 3 and one of the LayerNorm/wpe grads.
  auto sp = collectives_of_one_step(2, ex::TpMode::sequence_parallel);
  const auto& ag = sp["all_gather"];
  const auto& rs = sp["reduce_scatter"];
  const auto& sp_ar = sp["all_reduce"];
  std::printf("sequence-parallel T=2: %zu all-gathers, %zu reduce-scatters (of rows·h floats), %zu all-reduces\n",
              ag.size(), rs.size(), sp_ar.size());
  EXPECT_EQ(count_of_size(ag, activation), 6 * L + 2);
  EXPECT_EQ(int(ag.size()), 6 * L + 2);
  EXPECT_EQ(count_of_size(rs, activation), 4 * L + 2);
  EXPECT_EQ(int(rs.size()), 4 * L + 2);
  EXPECT_EQ(count_of_size(sp_ar, per_row), 3);
  ASSERT_EQ(sp_ar.size(), 4u);
  // The extra one: ln_1, ln_2 (per block), ln_f weights and biases, and wpe.
  const std::uint64_t ln_and_wpe = std::uint64_t((4 * L + 2) * kConfig.hidden + kConfig.seq * kConfig.hidden) * 4;
  EXPECT_EQ(count_of_size(sp_ar, ln_and_wpe), 1);
}

TEST(GptTensorParallel, SequencePartialTensorsAreTheLayerNormsAndWpe) {
  test::run_ranks(2, [&](Comm& comm) {
    MemoryTracker mem(comm.rank(), nullptr);
    Gpt plain(kConfig, ex::TpGroup{comm, ex::TpMode::plain}, mem, 5);
    Gpt sp(kConfig, ex::TpGroup{comm, ex::TpMode::sequence_parallel}, mem, 5);
    EXPECT_TRUE(plain.sequence_partial_tensors().empty());
    const std::vector<std::string> names = sp.sequence_partial_tensors();
    EXPECT_EQ(names.size(), std::size_t(4 * kConfig.layers + 3));
    EXPECT_EQ(names.front(), "wpe");
    EXPECT_EQ(names.back(), "ln_f.bias");
    EXPECT_EQ(sp.sequence_partial_numel(),
              std::size_t((4 * kConfig.layers + 2) * kConfig.hidden + kConfig.seq * kConfig.hidden));
  });
}

TEST(GptTensorParallel, ActivationMemoryEqualsThePrediction) {
  for (ex::TpMode mode : {ex::TpMode::plain, ex::TpMode::sequence_parallel}) {
    std::vector<double> measured(2);
    test::run_ranks(2, [&](Comm& comm) {
      MemoryTracker mem(comm.rank(), nullptr);
      Gpt model(kConfig, ex::TpGroup{comm, mode}, mem, 5);
      const std::vector<int> tokens = random_tokens(kConfig.rows(), kConfig.vocab, 14);
      model.forward_backward(tokens.data(), tokens.data());
      measured[std::size_t(comm.rank())] = double(mem.peak(MemTag::activation));
    });
    const double predicted = gpt_activation_bytes(kConfig, 2, mode);
    std::printf("T=2 %-17s activations per rank: predicted %.0f B, tracker %.0f / %.0f B\n", mode_name(mode), predicted,
                measured[0], measured[1]);
    EXPECT_EQ(measured[0], predicted);
    EXPECT_EQ(measured[1], predicted);
  }
  EXPECT_LT(gpt_activation_bytes(kConfig, 2, ex::TpMode::sequence_parallel),
            gpt_activation_bytes(kConfig, 2, ex::TpMode::plain));
}
