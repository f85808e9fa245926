// The planner (core/theory/plan.h) against the curriculum's worked examples, each with the
// seed it comes from and the seed's own figure; where the seed rounds or counts bytes
// another way, the test says how and by how much.
#include "core/theory/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/theory/schedule.h"

namespace th = dtl::theory;

namespace {

th::ParallelConfig config(int dp, int tp, int pp, int zero, th::ZeroConvention c, int M = 1, int b = 1) {
  th::ParallelConfig p;
  p.dp = dp, p.tp = tp, p.pp = pp, p.zero = zero, p.convention = c, p.micro_batches = M, p.micro_batch_size = b;
  return p;
}

th::ClusterSpec a100(int gpus) {
  th::ClusterSpec c = th::cluster_preset("a100-80gb");
  c.gpus = gpus;
  return c;
}

const th::LedgerEntry* find(const th::Plan& p, th::Axis axis) {
  for (const auto& e : p.ledger)
    if (e.axis == axis) return &e;
  return nullptr;
}

std::string thrown(const th::ModelSpec& m, const th::ClusterSpec& c, const th::ParallelConfig& p) {
  try {
    th::plan(m, c, p);
  } catch (const dtl::UsageError& e) { return e.what(); }
  return "(nothing thrown)";
}

// The cp grids below: dp 2 × tp 2 × cp 2 on 8 GPUs of 4 per node, ZeRO-1, 16 B per parameter.
th::ParallelConfig cp_config(th::CpAlgo algo) {
  th::ParallelConfig cfg = config(2, 2, 1, 1, th::ZeroConvention::sixteen);
  cfg.cp = 2, cfg.cp_algo = algo;
  return cfg;
}
std::vector<std::pair<int, double>> cp_lines(const th::Plan& p) {  // each cp line's calls and bytes
  std::vector<std::pair<int, double>> out;
  for (const auto& e : p.ledger)
    if (e.axis == th::Axis::cp) out.emplace_back(e.calls, e.bytes);
  return out;
}

}  // namespace

// Seed 002, worked example 1: 13B, fp16 with fp32 Adam m and v and no master copy (12 B/param).
TEST(Plan, Seed002ThirteenBillionZero2And3OnEightGpus) {
  const auto m = th::model_preset("13b");
  const auto z2 = th::plan(m, a100(8), config(8, 1, 1, 2, th::ZeroConvention::twelve));
  EXPECT_DOUBLE_EQ(z2.memory.params, 26e9);
  EXPECT_DOUBLE_EQ(z2.memory.grads, 3.25e9);
  EXPECT_DOUBLE_EQ(z2.memory.optimizer, 13e9);
  EXPECT_DOUBLE_EQ(z2.memory.model_state(), 42.25e9);  // seed: 42.25 GB
  const auto z3 = th::plan(m, a100(8), config(8, 1, 1, 3, th::ZeroConvention::twelve));
  EXPECT_DOUBLE_EQ(z3.memory.model_state(), 19.5e9);  // seed: 19.5 GB
  // The same run under the other conventions, reported beside it.
  EXPECT_DOUBLE_EQ(z3.memory.model_state_sixteen, 26e9);
  EXPECT_DOUBLE_EQ(z3.memory.model_state_eight, 13e9);
}

// Seed 001, ZeRO stage 3: 175B on 16 GPUs, 350 + 700 + 350 GB = 1400 GB / 16. Its count is
// 8 B/param (2+2+4). The seed calls 87.5 GB a fit; on an 80 GB GPU it is not, before activations.
TEST(Plan, Seed001GptThreeZero3OnSixteenGpus) {
  const auto p = th::plan(th::model_preset("175b"), a100(16), config(16, 1, 1, 3, th::ZeroConvention::eight));
  EXPECT_DOUBLE_EQ(p.memory.model_state(), 87.5e9);  // seed: 87.5 GB
  EXPECT_FALSE(p.memory.fits());
  EXPECT_LT(p.memory.headroom(), -7.5e9);
  // Plain DDP under the same count is 1400 GB; the seed's "1050 GB" leaves the gradients out.
  const auto ddp = th::plan(th::model_preset("175b"), a100(16), config(16, 1, 1, 0, th::ZeroConvention::eight));
  EXPECT_DOUBLE_EQ(ddp.memory.model_state(), 1400e9);
}

// Seed 002, worked example 3: 175B on 256 A100 (32 nodes × 8), TP 8 × PP 4 × DP 8, ZeRO-2 over
// DP, 12 B/param: 10.94 + 5.47 + 1.37 = 17.78 GB (the sum of rounded parts; exact 17.773 GB),
// "+ activations (~5-10 GB) ≈ 25 GB". Our selective-recompute activations for b = 1, s = 2048:
// 34·s·b·h/8 per layer × 24 layers × 4 in flight = 10.3 GB.
TEST(Plan, Seed002GptThreeOnTwoHundredFiftySixA100) {
  const auto m = th::model_preset("175b");
  auto cfg = config(8, 8, 4, 2, th::ZeroConvention::twelve, 8);
  cfg.recompute = th::Recompute::selective;
  const auto p = th::plan(m, a100(256), cfg);
  EXPECT_DOUBLE_EQ(p.memory.params, 175e9 * 2 / 32);      // 10.9375 GB, seed 10.94
  EXPECT_DOUBLE_EQ(p.memory.optimizer, 175e9 * 8 / 256);  // 5.46875 GB, seed 5.47
  EXPECT_DOUBLE_EQ(p.memory.grads, 175e9 * 2 / 256);      // 1.3671875 GB, seed 1.37
  EXPECT_NEAR(p.memory.model_state(), 17.78e9, 0.01e9);   // 17.7734 GB
  const double per_layer = 2048.0 * 12288 * 34 / 8;
  EXPECT_DOUBLE_EQ(p.memory.activations, per_layer * 24 * 4);
  EXPECT_TRUE(p.memory.fits());
  EXPECT_NEAR(p.memory.total(), 25e9, 4e9);  // seed: ≈ 25 GB
}

// Seed 002, section 6: Llama 70B on 128 GPUs, TP 8 (inside the 8-GPU NVLink nodes) × PP 4 ×
// DP 4; "intra-node NVLink for TP, inter-node InfiniBand for PP/DP". The seed gives no bytes.
TEST(Plan, Seed002SeventyBillionOnOneHundredTwentyEightGpus) {
  const auto p = th::plan(th::model_preset("70b"), a100(128), config(4, 8, 4, 1, th::ZeroConvention::sixteen, 16));
  const auto* tp = find(p, th::Axis::tp);
  const auto* pp = find(p, th::Axis::pp);
  const auto* dp = find(p, th::Axis::dp);
  ASSERT_TRUE(tp && pp && dp);
  EXPECT_FALSE(tp->crosses_nodes);
  EXPECT_DOUBLE_EQ(tp->inter_bytes, 0);
  EXPECT_TRUE(dp->crosses_nodes);
  EXPECT_DOUBLE_EQ(dp->intra_bytes, 0);
  EXPECT_TRUE(pp->crosses_nodes);
  EXPECT_DOUBLE_EQ(pp->intra_bytes, 0);
  // DP under ZeRO-1 (the distributed optimizer): a reduce-scatter of this GPU's 16-bit
  // gradient slice and an all-gather of its parameters, together an all-reduce's
  // 2(d−1)/d · 2Ψ/(tp·pp).
  EXPECT_EQ(dp->collective, "reduce_scatter gradients");
  EXPECT_DOUBLE_EQ(p.bytes_on(th::Axis::dp), 2.0 * 3 / 4 * 2 * 70e9 / 32);
}

// Seed 001, 3D parallelism: GPT-3 on 1024 A100, PP 8 × TP 8 × DP 16: "175B / 64 = 2.7B params ×
// 2 bytes = 5.4 GB, optimizer 5.4 × 3 = 16.2 GB" — 8 B/param, no ZeRO. Exact: 21.875 GB (the seed
// rounds 2.73B to 2.7B: 21.6 GB). Activations "~40 GB (depends on micro-batch)"; ours with no
// recomputation, b = 1: s·b·h(34 + 5as/h)/8 × 12 layers × 8 in flight = 34.4 GB.
TEST(Plan, Seed001GptThreeOnOneThousandTwentyFourGpus) {
  const auto p = th::plan(th::model_preset("175b"), a100(1024), config(16, 8, 8, 0, th::ZeroConvention::eight, 32));
  EXPECT_DOUBLE_EQ(p.memory.model_state(), 175e9 / 64 * 8);
  EXPECT_NEAR(p.memory.model_state(), 21.6e9, 0.3e9);
  const double per_layer = 2048.0 * 12288 * (34 + 5.0 * 96 * 2048 / 12288) / 8;
  EXPECT_DOUBLE_EQ(p.memory.activations, per_layer * 12 * 8);
  EXPECT_NEAR(p.memory.total(), 62e9, 7e9);  // seed: ~62 GB
  EXPECT_TRUE(p.memory.fits());
}

// Seed 002, practice problem 1: ring all-reduce of 200 MB on 16 GPUs at 100 GB/s = 3.75 ms.
TEST(Plan, Seed002RingAllReducePracticeProblem) {
  EXPECT_NEAR(th::ring_all_reduce_seconds(16, 200e6, {0, 100e9}), 3.75e-3, 1e-15);
  EXPECT_DOUBLE_EQ(th::ring_all_reduce_seconds(16, 200e6, {0, 100e9}), th::ring_all_reduce_time(16, 200e6, {0, 100e9}));
}

// Seed 002, section 4: 32 layers, d = 4096: each all-reduce "~2·d²·2 bytes ≈ 64 MB", 4L = 128 of
// them, "~8.2 GB per step". 2·d² elements is b·s = 2d = 8192 tokens (b 4, s 2048). Exactly
// 64 MiB each and 8 GiB = 8.59e9 B in all: the seed writes 64 MiB as 64 MB and 8192 MB as 8.2 GB.
// With tp = 2 the ring's 2(t−1)/t is 1, so the bytes a GPU sends equal the payload the seed counts.
TEST(Plan, Seed002TensorParallelTrafficThirtyTwoLayers) {
  th::ModelSpec m;
  m.layers = 32, m.hidden = 4096, m.heads = 32, m.seq = 2048, m.vocab = 0;
  const auto p = th::plan(m, a100(2), config(1, 2, 1, 0, th::ZeroConvention::sixteen, 1, 4));
  const auto* tp = find(p, th::Axis::tp);
  ASSERT_TRUE(tp);
  EXPECT_EQ(tp->calls, 128);
  EXPECT_DOUBLE_EQ(tp->bytes, 8.0 * 1024 * 1024 * 1024);
  EXPECT_NEAR(tp->bytes / (1024.0 * 1024) / 1000, 8.2, 0.01);  // the seed's units: MiB, then 1000 of them a "GB"
}

// Seed 002, practice problem 5(c): TP 8, 96 layers, d = 8192, each all-reduce of d²·2 bytes
// (b·s = d tokens), 2·7/8·134M ≈ 235 MB per all-reduce, × 4 × 96 ≈ 90.2 GB per GPU per step.
TEST(Plan, Seed002TensorParallelTrafficNinetySixLayers) {
  th::ModelSpec m;
  m.layers = 96, m.hidden = 8192, m.heads = 64, m.seq = 2048, m.vocab = 0;
  const auto p = th::plan(m, a100(8), config(1, 8, 1, 0, th::ZeroConvention::sixteen, 1, 4));
  const auto* tp = find(p, th::Axis::tp);
  ASSERT_TRUE(tp);
  EXPECT_EQ(tp->calls, 384);
  EXPECT_NEAR(tp->bytes, 90.2e9, 0.05e9);
}

// Seed 001: M = 32, P = 4 → 3/35 = 8.6 %; seed 002: P = 8, M = 32 → 7/39 = 17.9 %. The pipeline
// lab's own formula (core/theory/schedule.h) is the reference.
TEST(Plan, BubbleMatchesTheSeedsAndThePipelineLab) {
  const auto m = th::model_preset("70b");
  const auto four = th::plan(m, a100(4), config(1, 1, 4, 0, th::ZeroConvention::sixteen, 32));
  EXPECT_NEAR(four.bubble, 0.086, 0.0005);
  EXPECT_DOUBLE_EQ(four.bubble, dtl::pipeline::bubble_idle_share(4, 32));
  const auto eight = th::plan(m, a100(8), config(1, 1, 8, 0, th::ZeroConvention::sixteen, 32));
  EXPECT_NEAR(eight.bubble, 0.179, 0.0005);
  EXPECT_DOUBLE_EQ(eight.bubble, dtl::pipeline::bubble_idle_share(8, 32));
  EXPECT_NEAR(eight.time.bubble / eight.time.busy, 7.0 / 32, 1e-12);  // relative to compute: (P−1)/M
}

// Seed 000: 7B (14 GB of fp16 gradients) on 8 GPUs over InfiniBand at 50 GB/s: 2·7/8·14/50 =
// 0.49 s; with 2 s of compute, efficiency 2/(2 + 0.49) ≈ 80 %. Seed 002: the same on NVLink at
// 600 GB/s, ≈ 41 ms. Latency 0 as the seeds' formula has none; a node of 1 GPU puts every ring
// edge on InfiniBand.
TEST(Plan, Seed000DataParallelAllReduceOfSevenBillion) {
  th::ClusterSpec ib = a100(8);
  ib.gpus_per_node = 1;
  ib.inter = {0, 50e9};
  const auto p = th::plan(th::model_preset("7b"), ib, config(8, 1, 1, 0, th::ZeroConvention::sixteen));
  const auto* dp = find(p, th::Axis::dp);
  ASSERT_TRUE(dp && dp->crosses_nodes);
  EXPECT_NEAR(dp->time_s, 0.49, 1e-12);
  EXPECT_NEAR(th::comm_efficiency(2.0, dp->time_s), 0.80, 0.005);
  th::ClusterSpec nvlink = a100(8);
  nvlink.intra = {0, 600e9};
  const auto q = th::plan(th::model_preset("7b"), nvlink, config(8, 1, 1, 0, th::ZeroConvention::sixteen));
  ASSERT_FALSE(find(q, th::Axis::dp)->crosses_nodes);
  EXPECT_NEAR(find(q, th::Axis::dp)->time_s, 0.041, 0.0005);
}

// Seed 000's exercise (7B on 8 A100 over NVLink 900 GB/s; 70B on 64 H100 across 8 nodes,
// InfiniBand 400 Gb/s; 1T on 4096 H100) has no answer in the seed: these are the planner's
// pure-DP all-reduce times (α = 0), the comm side of its ratio.
TEST(Plan, Seed000ExerciseDataParallelTimes) {
  th::ClusterSpec a = a100(8);
  a.intra = {0, 900e9};
  const auto seven = th::plan(th::model_preset("7b"), a, config(8, 1, 1, 0, th::ZeroConvention::sixteen));
  EXPECT_NEAR(find(seven, th::Axis::dp)->time_s, 2 * 7.0 / 8 * 14e9 / 900e9, 1e-12);  // 27.2 ms
  th::ClusterSpec h = th::cluster_preset("h100-80gb");
  h.inter.alpha_s = 0;
  h.gpus = 64;
  const auto seventy = th::plan(th::model_preset("70b"), h, config(64, 1, 1, 0, th::ZeroConvention::sixteen));
  EXPECT_NEAR(find(seventy, th::Axis::dp)->time_s, 2 * 63.0 / 64 * 140e9 / 50e9, 1e-9);  // 5.51 s
  h.gpus = 4096;
  const auto trillion = th::plan(th::model_preset("1t"), h, config(4096, 1, 1, 0, th::ZeroConvention::sixteen));
  EXPECT_NEAR(find(trillion, th::Axis::dp)->time_s, 2 * 4095.0 / 4096 * 2e12 / 50e9, 1e-6);  // 80 s
}

TEST(Plan, MfuAndHfuFollowTheirFlopCounts) {
  auto cfg = config(8, 8, 4, 1, th::ZeroConvention::sixteen, 32);
  cfg.recompute = th::Recompute::full;
  const auto p = th::plan(th::model_preset("175b"), a100(256), cfg);
  const double attention = 12.0 * 96 * 12288 * 2048;
  EXPECT_DOUBLE_EQ(p.model_flops_per_token, 6 * 175e9 + attention);
  EXPECT_DOUBLE_EQ(p.hardware_flops_per_token, 8 * 175e9 + attention * 4 / 3);
  EXPECT_NEAR(p.hfu / p.mfu, p.hardware_flops_per_token / p.model_flops_per_token, 1e-12);
  EXPECT_LT(p.hfu, cfg.efficiency);  // bubble and communication only take away
  EXPECT_DOUBLE_EQ(p.tokens_per_step, 8.0 * 32 * 2048);
}

TEST(Plan, SearchKeepsOnlyFittingConfigurationsFastestFirst) {
  const auto ranked = th::search(th::model_preset("175b"), a100(256), 256);
  ASSERT_FALSE(ranked.empty());
  EXPECT_LE(ranked.size(), 10u);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto& p = ranked[i].plan;
    EXPECT_TRUE(p.memory.fits()) << i;
    EXPECT_EQ(p.config.dp * p.config.tp * p.config.pp, 256) << i;
    EXPECT_EQ(96 % p.config.tp, 0);
    EXPECT_EQ(96 % p.config.pp, 0);
    EXPECT_LE(p.config.tp, 8);
    if (i > 0) {
      EXPECT_LE(p.tokens_per_s, ranked[i - 1].plan.tokens_per_s) << i;
      EXPECT_FALSE(ranked[i].loses_because.empty()) << i;
    }
  }
  EXPECT_TRUE(ranked[0].loses_because.empty());
}

TEST(Plan, BadInputNamesTheConstraint) {
  const auto m = th::model_preset("175b");
  EXPECT_NE(thrown(m, a100(256), config(3, 8, 4, 0, th::ZeroConvention::sixteen)).find("dp·tp·pp"), std::string::npos);
  EXPECT_NE(thrown(m, a100(5 * 4), config(4, 5, 1, 0, th::ZeroConvention::sixteen)).find("heads"), std::string::npos);
  EXPECT_NE(thrown(m, a100(97), config(1, 1, 97, 0, th::ZeroConvention::sixteen)).find("layers"), std::string::npos);
  EXPECT_NE(thrown(m, a100(8), config(8, 1, 1, 4, th::ZeroConvention::sixteen)).find("ZeRO"), std::string::npos);
  EXPECT_NE(thrown(m, a100(0), config(1, 1, 1, 0, th::ZeroConvention::sixteen)).find("(N)"), std::string::npos);
  EXPECT_THROW(th::model_preset("42b"), dtl::UsageError);
  EXPECT_THROW(th::cluster_preset("tpu"), dtl::UsageError);
  EXPECT_THROW(th::search(m, a100(0), 0), dtl::UsageError);
}

TEST(Plan, AModelGivenByItsParametersAloneGetsModelStateAndDpTrafficOnly) {
  th::ModelSpec m;
  m.params = 13e9;
  const auto p = th::plan(m, a100(8), config(8, 1, 1, 2, th::ZeroConvention::twelve));
  EXPECT_DOUBLE_EQ(p.memory.model_state(), 42.25e9);
  EXPECT_DOUBLE_EQ(p.memory.activations, 0);
  EXPECT_DOUBLE_EQ(p.tokens_per_step, 0);
  EXPECT_GT(p.bytes_on(th::Axis::dp), 0);
  EXPECT_THROW(th::search(m, a100(8), 8), dtl::UsageError);
}

// Ψ from a shape is the GPT's exact count: the published sizes of GPT-2 (the Hugging Face
// GPT2Model, tied head, V 50257, s 1024), to the parameter, and Megatron-LM's closed form
// 12·L·h²·(1 + 13/(12h) + (V+s)/(12·L·h)) short of it by the final LayerNorm's 2h.
TEST(Plan, ParametersFromTheShapeAreGptTwosPublishedCounts) {
  struct Published {
    const char* name;
    int layers, hidden;
    double params;
  };
  for (const Published& p :
       {Published{"gpt2", 12, 768, 124439808}, Published{"gpt2-medium", 24, 1024, 354823168},
        Published{"gpt2-large", 36, 1280, 774030080}, Published{"gpt2-xl", 48, 1600, 1557611200}}) {
    th::ModelSpec m;
    m.layers = p.layers, m.hidden = p.hidden, m.heads = 12, m.seq = 1024, m.vocab = 50257;
    EXPECT_EQ(m.shape_parameters(), p.params) << p.name;
    EXPECT_EQ(m.parameters(), p.params) << p.name << ": no preset size, so Ψ is the shape's";
    EXPECT_NEAR(m.shape_parameters() - m.shape_parameters_approx(), 2.0 * p.hidden, 1e-3 * p.params) << p.name;
  }
}

// A mixture of experts by hand (plan.h): L 2, h 64, a 4, s 128, V 1000, 8 experts top-2 on
// 8 GPUs, dp 8 with ep 4, 16 B per parameter, ZeRO-0, one micro-batch of one sequence.
// The dense MLP 8h² + 5h = 33,088; the dense GPT 172,288; the experts add 2·(7·33,088 + 64·8)
// = 464,256, so Ψ = 636,544, of which the experts 2·8·33,088 = 529,408; a token uses
// Ψ − 2·6·33,088 = 239,488.
TEST(Plan, MixtureOfExpertsShardsItsExpertsAndSendsTokensByAllToAll) {
  th::ModelSpec m{"moe", 0, 2, 64, 4, 128, 1000};
  m.experts = 8, m.top_k = 2;
  EXPECT_DOUBLE_EQ(m.shape_parameters(), 636544);
  EXPECT_DOUBLE_EQ(m.expert_parameters(), 529408);
  EXPECT_DOUBLE_EQ(m.active_parameters(), 239488);
  th::ParallelConfig cfg = config(8, 1, 1, 0, th::ZeroConvention::sixteen);
  cfg.ep = 4;
  const th::Plan p = th::plan(m, a100(8), cfg);
  // Each GPU: the dense 107,136 parameters and 2 of the 8 experts (132,352), 16 B each.
  EXPECT_DOUBLE_EQ(p.memory.model_state(), (107136.0 + 132352.0) * 16);
  double dense_dp = 0, expert_dp = 0, ep = 0;
  for (const auto& e : p.ledger) {
    if (e.axis == th::Axis::dp) (e.collective.find("experts") == std::string::npos ? dense_dp : expert_dp) += e.bytes;
    if (e.axis == th::Axis::ep) ep += e.bytes;
  }
  EXPECT_DOUBLE_EQ(dense_dp, 2.0 * 7 / 8 * 107136 * 2) << "the dense gradients over dp 8";
  EXPECT_DOUBLE_EQ(expert_dp, 2.0 * 1 / 2 * 132352 * 2) << "each expert's over its dp/ep = 2 replicas";
  // 4 all-to-alls per layer, 2 layers: 8 of (b·s/t)·k·h = 128·2·64 elements, 3/4 of them leaving.
  EXPECT_DOUBLE_EQ(ep, 8 * 128.0 * 2 * 64 * 2 * 3 / 4);
  EXPECT_DOUBLE_EQ(p.model_flops_per_token, 6 * 239488.0 + 12.0 * 2 * 64 * 128);
  EXPECT_GT(p.time.ep, 0);
  // ep must divide dp and E, and needs experts; k at most E; experts need a shape.
  cfg.ep = 3;
  EXPECT_THROW(th::plan(m, a100(8), cfg), dtl::UsageError);
  cfg.ep = 2;
  th::ModelSpec dense{"dense", 0, 2, 64, 4, 128, 1000};
  EXPECT_THROW(th::plan(dense, a100(8), cfg), dtl::UsageError);
  m.top_k = 9;
  EXPECT_THROW(th::plan(m, a100(8), cfg), dtl::UsageError);
}

// Context parallelism by hand (plan.h, context_parallel.h): L 2, h 64, a 4, s 128, V 1000
// (Ψ 172,288), one micro-batch of one sequence on cp_config's grid. Ranks tp fastest, then cp,
// then dp: tp {0, 1}, cp {0, 2} (one node), dp {0, 4}, the weights' replicas dp·cp {0, 2, 4, 6}
// (2 of its 4 ring edges cross nodes).
TEST(Plan, ContextParallelismSplitsTheSequenceAndRingsKeysAndValues) {
  const th::ModelSpec m{"cp", 0, 2, 64, 4, 128, 1000};
  th::ClusterSpec c = a100(8);
  c.gpus_per_node = 4;
  th::ParallelConfig cfg = cp_config(th::CpAlgo::ring);
  const th::Plan p = th::plan(m, c, cfg);
  // Weights replicated over cp: Ψ/tp = 86,144 per GPU; ZeRO-1 over dp·cp = 4: 2 + 2 + 12/4 B each.
  EXPECT_DOUBLE_EQ(p.memory.model_state(), 86144.0 * 7);
  // Korthikanti's per-layer bytes ÷ (t·cp): s·b·h = 8192; none (34 + 5·4·128/64) = 74, selective
  // 34, full 2; × 2 layers × 1 micro-batch in flight.
  EXPECT_DOUBLE_EQ(p.memory.activations_none, 8192.0 * 74 / 4 * 2);  // 303,104
  EXPECT_DOUBLE_EQ(p.memory.activations_selective, 8192.0 * 34 / 4 * 2);
  EXPECT_DOUBLE_EQ(p.memory.activations_full, 8192.0 * 2 / 4 * 2);
  EXPECT_DOUBLE_EQ(p.tokens_per_step, 256) << "dp·M·b·s: cp splits each sequence, it adds none";
  // A K/V chunk: 64 positions × 32 features (h/tp) × K and V, 16-bit = 8,192 B. Per layer (× 2):
  // forward cp−1 = 1 hop, backward 1 K/V hop and cp = 2 dK/dV hops (the last brings it home).
  EXPECT_EQ(cp_lines(p), (std::vector<std::pair<int, double>>{{2, 2 * 8192.0}, {2, 2 * 8192.0}, {4, 4 * 8192.0}}));
  for (const auto& e : p.ledger) EXPECT_TRUE(e.axis != th::Axis::cp || !e.crosses_nodes) << "cp {0, 2} lies in node 0";
  // TP: 4 all-reduces × 2 layers of b·(s/cp)·h·2 B = 8,192 B, 2(t−1)/t of it each.
  EXPECT_DOUBLE_EQ(find(p, th::Axis::tp)->bytes, 8 * 8192.0);
  // DP over dp·cp = 4: reduce-scatter and all-gather of 3/4 · 86,144 · 2 B, half of it inter-node.
  const th::LedgerEntry* dp = find(p, th::Axis::dp);
  EXPECT_DOUBLE_EQ(dp->bytes, 0.75 * 86144 * 2);
  EXPECT_DOUBLE_EQ(dp->inter_bytes, 0.75 * 86144 * 2 / 2);
  EXPECT_NE(dp->collective.find("dp·cp"), std::string::npos);
  // Exposed per layer: forward hops beyond their block (4·b·(s/cp)²·h/t = 524,288 FLOPs at peak·
  // efficiency), backward steps (K/V and dK/dV) beyond twice it, the last dK/dV hop whole.
  const double block = 524288 / (c.peak_flops * 0.5), hop = c.intra.alpha_s + 8192 / c.intra.beta_Bps;
  const double step = c.intra.alpha_s + 2 * 8192 / c.intra.beta_Bps;
  EXPECT_DOUBLE_EQ(p.cp_ring.block_forward_s, block);
  EXPECT_NEAR(p.time.cp, 2 * (std::max(0.0, hop - block) + std::max(0.0, step - 2 * block) + hop), 1e-15);
  // The world and the rules: dp·tp·pp·cp = gpus; 2·cp divides s (zig-zag); a sequence to split.
  EXPECT_NE(thrown(m, a100(4), cfg).find("--cp"), std::string::npos);
  EXPECT_NE(thrown(th::ModelSpec{"psi", 7e9}, a100(8), cfg).find("sequence"), std::string::npos);
  cfg.cp = 3;
  EXPECT_NE(thrown(m, a100(12), cfg).find("2·cp"), std::string::npos);
  c.gpus_per_node = 2;  // the cp pair {0, 2} now spans two nodes
  for (const auto& e : th::plan(m, c, cp_config(th::CpAlgo::ring)).ledger)
    EXPECT_TRUE(e.axis != th::Axis::cp || e.crosses_nodes);
}

// The same with Llama 3's all-gather and with Ulysses (context_parallel.h), by hand: all-gather
// of K/V and reduce-scatter of dK/dV, (cp−1)·8,192 B each; Ulysses' output all-to-all (cp−1)/cp ·
// b·(s/cp)·h/t · 2 B = 2,048 B and Q/K/V's three times that; every collective exposed whole.
TEST(Plan, ContextParallelAllGatherAndUlyssesSendTheirCollectivesBytes) {
  const th::ModelSpec m{"cp", 0, 2, 64, 4, 128, 1000};
  th::ClusterSpec c = a100(8);
  c.gpus_per_node = 4;
  const th::Plan gather = th::plan(m, c, cp_config(th::CpAlgo::all_gather));
  EXPECT_EQ(cp_lines(gather), (std::vector<std::pair<int, double>>{{2, 2 * 8192.0}, {2, 2 * 8192.0}}));
  EXPECT_NEAR(gather.time.cp, 4 * (c.intra.alpha_s + 8192 / c.intra.beta_Bps), 1e-15);
  th::ParallelConfig cfg = cp_config(th::CpAlgo::ulysses);
  EXPECT_EQ(cp_lines(th::plan(m, c, cfg)),
            (std::vector<std::pair<int, double>>{{2, 2 * 6144.0}, {2, 2 * 2048.0}, {2, 2 * 2048.0}, {2, 2 * 6144.0}}));
  cfg.recompute = th::Recompute::full;  // reruns the forward's collectives: its lines count twice
  EXPECT_EQ(cp_lines(th::plan(m, c, cfg)).front(), (std::pair<int, double>{4, 4 * 6144.0}));
  // Ulysses gives each GPU whole heads: 4 heads / tp 2 = 2 do not split over cp 4.
  cfg = config(1, 2, 1, 1, th::ZeroConvention::sixteen);
  cfg.cp = 4, cfg.cp_algo = th::CpAlgo::ulysses;
  EXPECT_NE(thrown(m, a100(8), cfg).find("heads"), std::string::npos);
}
