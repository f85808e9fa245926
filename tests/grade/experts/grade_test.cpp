// Graded tests of the experts exercises (exercises/experts.h): the router against a
// float64 softmax and brute-force top-k, capacity and the dispatch layout against counts
// worked by hand, the layout used for real over thread ranks with all_to_allv, and the
// combine against hand sums and finite differences of its backward. Each failure says
// which case and the largest difference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "exercises/experts.h"
#include "tests/grade/grade_util.h"

using namespace dtl;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// Token t's probabilities in float64 and its k best experts (ties: the lower index).
std::vector<int> brute_top_k(const float* logits, int E, int k, std::vector<double>& p) {
  const double top = *std::max_element(logits, logits + E);
  double sum = 0;
  p.assign(std::size_t(E), 0);
  for (int e = 0; e < E; ++e) sum += p[std::size_t(e)] = std::exp(double(logits[e]) - top);
  for (double& x : p) x /= sum;
  std::vector<int> order(static_cast<std::size_t>(E));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&p](int a, int b) { return p[std::size_t(a)] > p[std::size_t(b)]; });
  order.resize(std::size_t(k));
  return order;
}

ex::Routing hand_routing(int tokens, int experts, int k, std::vector<int> choice) {
  ex::Routing r{tokens, experts, k, std::move(choice), {}, {}};
  for (std::size_t i = 0; i < r.expert.size(); ++i) r.weight.push_back(0.1f * float(i + 1));
  r.probs.assign(std::size_t(tokens) * std::size_t(experts), 0.0f);
  return r;
}

}  // namespace

// ---- TopKRouter ---------------------------------------------------------------------------

TEST(TopKRouter, ChoicesAndWeightsAreTheSoftmaxsLargest) {
  const int T = 37, E = 8;
  const std::vector<float> logits = random_values(std::size_t(T * E), 3, 2.0f);
  for (int k : {1, 2, 3, 8}) {
    const ex::Routing r = ex::route_top_k(logits.data(), T, E, k);
    ASSERT_EQ(r.expert.size(), std::size_t(T * k)) << "route_top_k(k " << k << "): expert must hold tokens·k slots";
    ASSERT_EQ(r.weight.size(), std::size_t(T * k));
    ASSERT_EQ(r.probs.size(), std::size_t(T * E));
    double worst = 0;
    for (int t = 0; t < T; ++t) {
      std::vector<double> p;
      const std::vector<int> want = brute_top_k(logits.data() + t * E, E, k, p);
      for (int j = 0; j < k; ++j) {
        const std::size_t slot = std::size_t(t * k + j);
        ASSERT_EQ(r.expert[slot], want[std::size_t(j)]) << "k " << k << ", token " << t << ", choice " << j;
        worst = std::max(worst, std::fabs(double(r.weight[slot]) - p[std::size_t(want[std::size_t(j)])]));
      }
      for (int e = 0; e < E; ++e)
        worst = std::max(worst, std::fabs(double(r.probs[std::size_t(t * E + e)]) - p[std::size_t(e)]));
    }
    EXPECT_LE(worst, 1e-6) << "k " << k << ": largest difference from a float64 softmax " << worst;
  }
}

TEST(TopKRouter, TiesGoToTheLowerExpertAndLargeLogitsDoNotOverflow) {
  const std::vector<float> logits = {500.0f, 1000.0f, 1000.0f, -1000.0f};  // one token, 4 experts
  const ex::Routing r = ex::route_top_k(logits.data(), 1, 4, 2);
  ASSERT_EQ(r.expert.size(), 2u);
  EXPECT_EQ(r.expert[0], 1) << "experts 1 and 2 tie: the lower index comes first";
  EXPECT_EQ(r.expert[1], 2);
  EXPECT_NEAR(r.weight[0], 0.5, 1e-6) << "softmax without the max shift overflows to inf/NaN";
  EXPECT_NEAR(r.weight[1], 0.5, 1e-6);
  EXPECT_THROW(ex::route_top_k(logits.data(), 1, 4, 5), UsageError) << "k above the experts";
  EXPECT_THROW(ex::route_top_k(logits.data(), 1, 4, 0), UsageError) << "k of 0";
}

// 6 tokens, 3 experts, top-2, capacity 2. Choices (first, second):
//   t0 (0,1) t1 (0,2) t2 (0,1) t3 (1,0) t4 (2,0) t5 (1,2)
// First choices in token order: expert 0 keeps t0, t1 and is full at t2; expert 1 keeps t3,
// t5; expert 2 keeps t4. Second choices: t0→1 is full (t3, t5), t1→2 kept, t2→1 full,
// t3→0 full, t4→0 full, t5→2 full (t4, t1).
TEST(TopKRouter, CapacityKeepsFirstChoicesFirstInTokenOrder) {
  const ex::Routing r = hand_routing(6, 3, 2, {0, 1, 0, 2, 0, 1, 1, 0, 2, 0, 1, 2});
  const std::vector<std::uint8_t> kept = ex::kept_slots(r, 2);
  const std::vector<std::uint8_t> want = {1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0};
  ASSERT_EQ(kept.size(), want.size());
  for (std::size_t s = 0; s < want.size(); ++s)
    EXPECT_EQ(int(kept[s]), int(want[s])) << "slot " << s << " (token " << s / 2 << ", choice " << s % 2 << ")";
  const std::vector<std::uint8_t> all = ex::kept_slots(r, 12);
  EXPECT_EQ(std::count(all.begin(), all.end(), 1), 12) << "capacity 12 keeps every slot";
}

// ---- DispatchLayout -----------------------------------------------------------------------

// The routing above, capacity 2, over 3 ranks (an expert each): kept slots 0 (t0→0), 2 (t1→0),
// 3 (t1→2), 6 (t3→1), 8 (t4→2), 10 (t5→1). Sorted by expert: 0, 2 | 6, 10 | 3, 8.
TEST(DispatchLayout, CountsFirstRowsAndOrderWorkedByHand) {
  const ex::Routing r = hand_routing(6, 3, 2, {0, 1, 0, 2, 0, 1, 1, 0, 2, 0, 1, 2});
  const ex::Dispatch d = ex::plan_dispatch(r, {1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0}, 3);
  EXPECT_EQ(d.send_order, (std::vector<int>{0, 2, 6, 10, 3, 8}));
  EXPECT_EQ(d.tokens_to_rank, (std::vector<std::size_t>{2, 2, 2}));
  EXPECT_EQ(d.first_row_of_rank, (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(d.tokens_per_expert, (std::vector<std::size_t>{2, 2, 2}));
  EXPECT_EQ(d.dropped, 6u);
  const ex::Dispatch one = ex::plan_dispatch(r, std::vector<std::uint8_t>(12, 1), 1);
  EXPECT_EQ(one.tokens_to_rank, (std::vector<std::size_t>{12}));
  EXPECT_EQ(one.first_row_of_rank, (std::vector<std::size_t>{0}));
  EXPECT_THROW(ex::plan_dispatch(r, std::vector<std::uint8_t>(12, 1), 2), UsageError) << "3 experts over 2 ranks";
}

TEST(DispatchLayout, RandomRoutingMatchesBruteForce) {
  const int T = 50, E = 8, k = 2;
  const std::vector<float> logits = random_values(std::size_t(T * E), 9);
  const ex::Routing r = ex::route_top_k(logits.data(), T, E, k);
  std::vector<std::uint8_t> kept(r.expert.size());
  for (std::size_t s = 0; s < kept.size(); ++s) kept[s] = std::uint8_t((s * 7) % 5 != 0);
  for (int P : {1, 2, 4, 8}) {
    const ex::Dispatch d = ex::plan_dispatch(r, kept, P);
    std::vector<int> want;
    for (int e = 0; e < E; ++e)  // rank, then expert, then token = expert, then slot
      for (std::size_t s = 0; s < kept.size(); ++s)
        if (kept[s] && r.expert[s] == e) want.push_back(int(s));
    EXPECT_EQ(d.send_order, want) << "send_order over " << P << " ranks";
    std::size_t row = 0;
    for (int q = 0; q < P; ++q) {
      EXPECT_EQ(d.first_row_of_rank.at(std::size_t(q)), row) << "first_row_of_rank[" << q << "], " << P << " ranks";
      std::size_t n = 0;
      for (int s : want) n += r.expert[std::size_t(s)] / (E / P) == q;
      EXPECT_EQ(d.tokens_to_rank.at(std::size_t(q)), n) << "tokens_to_rank[" << q << "], " << P << " ranks";
      row += n;
    }
    EXPECT_EQ(d.dropped, std::size_t(std::count(kept.begin(), kept.end(), 0)));
  }
}

// The layout used for real: 4 thread ranks send each kept row to its expert's rank with
// all_to_allv (the learner's counts and first rows); the receiver checks every row is the
// token it should be, in rank-then-expert-then-token order.
TEST(DispatchLayout, RowsArriveAtTheirExpertsOverFourRanks) {
  const int P = 4, T = 20, E = 8, k = 2, h = 3;
  const grade::GradedRun run = grade::run_graded(P, [&](Comm& c) {
    const std::vector<float> logits = random_values(std::size_t(T * E), 20 + unsigned(c.rank()));
    const ex::Routing r = ex::route_top_k(logits.data(), T, E, k);
    const ex::Dispatch d = ex::plan_dispatch(r, ex::kept_slots(r, 4), P);
    std::vector<float> send(std::max<std::size_t>(1, d.send_order.size() * h));
    for (std::size_t i = 0; i < d.send_order.size(); ++i)  // a row names its rank, token and expert
      for (int j = 0; j < h; ++j)
        send[i * h + std::size_t(j)] = float(j == 0   ? c.rank()
                                             : j == 1 ? d.send_order[i] / k
                                                      : r.expert[std::size_t(d.send_order[i])]);
    std::vector<std::size_t> counts(static_cast<std::size_t>(P)), from(static_cast<std::size_t>(P));
    for (int q = 0; q < P; ++q) counts[std::size_t(q)] = d.tokens_to_rank.at(std::size_t(q));
    c.all_to_all(counts.data(), from.data(), 1, DType::i64);
    AllToAllvLayout l = packed_all_to_allv(std::vector<std::size_t>(std::size_t(P)), from);
    for (int q = 0; q < P; ++q) {
      l.send_counts[std::size_t(q)] = counts[std::size_t(q)] * h,
      l.send_displs[std::size_t(q)] = d.first_row_of_rank.at(std::size_t(q)) * h;
      l.recv_counts[std::size_t(q)] *= h, l.recv_displs[std::size_t(q)] *= h;
    }
    std::vector<float> recv(std::max<std::size_t>(1, l.recv_extent()));
    c.all_to_allv(send.data(), recv.data(), l, DType::f32);
    for (std::size_t row = 0; row < l.recv_extent() / h; ++row) {
      const float expert = recv[row * h + 2];
      EXPECT_EQ(int(expert) / (E / P), c.rank()) << "rank " << c.rank() << " received a row of expert " << expert;
      if (row > 0 && recv[row * h] == recv[(row - 1) * h]) {
        EXPECT_GE(expert, recv[(row - 1) * h + 2]) << "experts out of order";
      }
    }
  });
  EXPECT_EQ(run.error, "") << run.error;
}

// ---- Combine ------------------------------------------------------------------------------

// 2 tokens, top-2, h = 2: slots 0 (t0, w .1), 1 (t0, w .2), 3 (t1, w .4) sent, slot 2 dropped.
TEST(Combine, UnpermutesAndWeightsByHand) {
  ex::Routing r = hand_routing(2, 4, 2, {0, 1, 2, 3});
  ex::Dispatch d;
  d.send_order = {1, 3, 0};  // rows of `back` in send order
  const std::vector<float> back = {10, 20, 30, 40, 50, 60};
  std::vector<float> out = {1, 1, 2, 2};  // the residual: must stay
  ex::combine_rows(back.data(), 2, d, r, out.data());
  const std::vector<float> want = {1 + 0.2f * 10 + 0.1f * 50, 1 + 0.2f * 20 + 0.1f * 60, 2 + 0.4f * 30, 2 + 0.4f * 40};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-5) << "out[" << i << "]";
}

// L = Σ c·out: the backward's d_back and d_weight against central differences in float64.
TEST(Combine, BackwardMatchesFiniteDifferences) {
  const int T = 5, k = 2, h = 4;
  ex::Routing r = hand_routing(T, 4, k, {0, 1, 2, 3, 1, 0, 3, 2, 0, 2});
  ex::Dispatch d;
  d.send_order = {0, 3, 4, 9, 1, 6, 7};
  std::vector<float> back = random_values(d.send_order.size() * h, 5), c = random_values(std::size_t(T * h), 6);
  auto loss = [&](const std::vector<float>& b, const ex::Routing& rr) {
    std::vector<float> out(std::size_t(T * h), 0.0f);
    ex::combine_rows(b.data(), h, d, rr, out.data());
    double sum = 0;
    for (std::size_t i = 0; i < out.size(); ++i) sum += double(c[i]) * double(out[i]);
    return sum;
  };
  std::vector<float> d_back(back.size()), d_weight(r.expert.size(), -7.0f);
  ex::combine_backward(back.data(), c.data(), h, d, r, d_back.data(), d_weight.data());
  double worst = 0;
  const float eps = 1e-2f;
  for (std::size_t i = 0; i < back.size(); ++i) {
    std::vector<float> up = back, down = back;
    up[i] += eps, down[i] -= eps;
    worst = std::max(worst, std::fabs((loss(up, r) - loss(down, r)) / (2 * eps) - d_back[i]));
  }
  for (int slot : d.send_order) {
    ex::Routing up = r, down = r;
    up.weight[std::size_t(slot)] += eps, down.weight[std::size_t(slot)] -= eps;
    worst = std::max(worst, std::fabs((loss(back, up) - loss(back, down)) / (2 * eps) - d_weight[std::size_t(slot)]));
  }
  EXPECT_LE(worst, 1e-3) << "largest difference from finite differences " << worst;
  EXPECT_EQ(d_weight[2], -7.0f) << "slot 2 was not sent: its d_weight must be left as it was";
}
