// Mixture-of-experts routing and dispatch (labs/experts/routing.h) against brute force and
// hand counts, and the dispatch/combine round trip over thread ranks with all_to_allv against
// the same layer computed on one rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "labs/experts/routing.h"
#include "tests/test_util.h"

namespace moe = dtl::moe;

namespace {

std::vector<float> random_logits(int tokens, int experts, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> v(std::size_t(tokens) * std::size_t(experts));
  for (float& x : v) x = n(gen);
  return v;
}

// The "expert" of the round trip: expert e scales a row by e + 1 (a distinct, exact map).
void run_expert(int expert, const float* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * float(expert + 1);
}

}  // namespace

TEST(MoeRouting, TopKIsTheLargestProbabilitiesOfTheSoftmax) {
  const int T = 50, E = 8;
  const std::vector<float> logits = random_logits(T, E, 1);
  for (int k : {1, 2, 3}) {
    const moe::Routing r = moe::route_top_k(logits.data(), T, E, k);
    for (int t = 0; t < T; ++t) {
      double sum = 0, top = -1e30;
      for (int e = 0; e < E; ++e) top = std::max(top, double(logits[std::size_t(t * E + e)]));
      for (int e = 0; e < E; ++e) sum += std::exp(double(logits[std::size_t(t * E + e)]) - top);
      std::vector<double> p(E);
      for (int e = 0; e < E; ++e) p[std::size_t(e)] = std::exp(double(logits[std::size_t(t * E + e)]) - top) / sum;
      std::vector<int> want(E);
      for (int e = 0; e < E; ++e) want[std::size_t(e)] = e;
      std::stable_sort(want.begin(), want.end(), [&p](int a, int b) { return p[std::size_t(a)] > p[std::size_t(b)]; });
      for (int j = 0; j < k; ++j) {
        EXPECT_EQ(r.expert[std::size_t(t * k + j)], want[std::size_t(j)]) << "token " << t << " choice " << j;
        EXPECT_NEAR(r.weight[std::size_t(t * k + j)], p[std::size_t(want[std::size_t(j)])], 1e-6);
      }
    }
  }
  EXPECT_THROW(moe::route_top_k(logits.data(), T, E, 9), dtl::UsageError);
}

// 16 tokens all preferring expert 0, then expert 1: capacity ⌈1.0 · 2 · 16 / 8⌉ = 4. Expert 0
// keeps tokens 0-3's first choices; expert 1 (everyone's second choice) tokens 0-3 too.
TEST(MoeRouting, CapacityKeepsFirstChoicesFirstInTokenOrder) {
  const int T = 16, E = 8, k = 2;
  std::vector<float> logits(std::size_t(T * E), 0.0f);
  for (int t = 0; t < T; ++t) logits[std::size_t(t * E)] = 3, logits[std::size_t(t * E + 1)] = 2;
  const moe::Routing r = moe::route_top_k(logits.data(), T, E, k);
  const int C = moe::expert_capacity(T, E, k, 1.0);
  ASSERT_EQ(C, 4);
  const auto kept = moe::kept_slots(r, C);
  for (int t = 0; t < T; ++t) {
    EXPECT_EQ(kept[std::size_t(t * k)], t < 4) << "token " << t << "'s first choice";
    EXPECT_EQ(kept[std::size_t(t * k + 1)], t < 4) << "token " << t << "'s second choice";
  }
  const moe::Dispatch d = moe::plan_dispatch(r, kept, 4);
  EXPECT_EQ(d.dropped, std::size_t(2 * (T - 4)));
  EXPECT_EQ(d.tokens_per_expert[0], 4u);
  EXPECT_EQ(d.tokens_to_rank[0], 8u) << "experts 0 and 1 live on rank 0";
  EXPECT_EQ(moe::expert_capacity(16, 8, 2, 1.25), 5);
}

// A balanced routing: token t's choices are experts (t + j·E/k) mod E, so every expert gets
// T·k/E slots and each of EP ranks T·k/EP; a rank sends T·k·(EP−1)/EP rows to the others, so
// T·k·h·(EP−1)/EP · 4 bytes in fp32 (the formula, exact here).
TEST(MoeRouting, BalancedDispatchSendsTkhTimesEpMinusOneOverEp) {
  const int T = 32, E = 8, k = 2, h = 16;
  for (int ep : {1, 2, 4, 8}) {
    moe::Routing r{T, E, k, {}, {}, std::vector<float>(std::size_t(T * E), 1.0f / E)};
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < k; ++j) r.expert.push_back((t + j * E / k) % E), r.weight.push_back(1.0f / E);
    const moe::Dispatch d = moe::plan_dispatch(r, std::vector<std::uint8_t>(r.expert.size(), 1), ep);
    const dtl::AllToAllvLayout l = moe::dispatch_layout(d, d.tokens_to_rank, h);
    EXPECT_EQ(l.sent_to_others(0) * 4, std::size_t(T * k * h * (ep - 1) / ep * 4)) << "EP " << ep;
    for (std::size_t i = 1; i < d.send_order.size(); ++i) {  // rank, expert, token order
      const int a = d.send_order[i - 1], b = d.send_order[i];
      EXPECT_TRUE(r.expert[std::size_t(a)] < r.expert[std::size_t(b)] ||
                  (r.expert[std::size_t(a)] == r.expert[std::size_t(b)] && a < b));
    }
    EXPECT_NEAR(moe::load_balancing_loss(r), 1.0, 1e-9) << "uniform routing and probabilities";
  }
  EXPECT_THROW(moe::plan_dispatch(moe::Routing{1, 8, 1, {0}, {1.0f}, {}}, {1}, 3), dtl::UsageError);
}

// Every token on expert 0 with probability ≈ 1 (k = 1): f₀ = 1 and P₀ = 1, so the loss is
// E · 1 · 1 = E, E times the balanced one.
TEST(MoeRouting, AllTokensOnOneExpertCostETimesTheBalancedLoss) {
  const int T = 10, E = 4;
  std::vector<float> logits(std::size_t(T * E), -100.0f);
  for (int t = 0; t < T; ++t) logits[std::size_t(t * E)] = 100;
  EXPECT_NEAR(moe::load_balancing_loss(moe::route_top_k(logits.data(), T, E, 1)), E, 1e-6);
}

// Expert parallelism's dispatch and combine over 4 thread ranks (8 experts, 2 a rank, top-2,
// capacity 1.25): each rank routes its own tokens, tells every rank how many rows it sends
// for each of that rank's experts (all_to_all of counts), sends the rows (all_to_allv), the
// owners apply their experts, the rows come back (the reverse all_to_allv) and are combined.
// The result equals the layer computed on one rank from the same routing, bit for bit (each
// output row sums the same products in the same order).
TEST(MoeRouting, DispatchAndCombineOverRanksEqualOneRank) {
  const int P = 4, T = 24, E = 8, k = 2, h = 6, local = E / P;
  dtl::test::run_ranks(P, [&](dtl::Comm& c) {
    const std::vector<float> logits = random_logits(T, E, 10 + unsigned(c.rank()));
    std::vector<float> x(std::size_t(T * h));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(c.rank() * 1000 + int(i)) * 0.01f;
    const moe::Routing r = moe::route_top_k(logits.data(), T, E, k);
    const moe::Dispatch d = moe::plan_dispatch(r, moe::kept_slots(r, moe::expert_capacity(T, E, k, 1.25)), P);
    // Counts per destination expert, grouped by the rank that holds it.
    std::vector<std::int64_t> per_expert(static_cast<std::size_t>(E)), from(static_cast<std::size_t>(E));
    for (int e = 0; e < E; ++e) per_expert[std::size_t(e)] = std::int64_t(d.tokens_per_expert[std::size_t(e)]);
    c.all_to_all(per_expert.data(), from.data(), std::size_t(local), dtl::DType::i64);
    std::vector<std::size_t> recv_tokens(std::size_t(P), 0);
    for (int q = 0; q < P; ++q)
      for (int e = 0; e < local; ++e) recv_tokens[std::size_t(q)] += std::size_t(from[std::size_t(q * local + e)]);
    const dtl::AllToAllvLayout there = moe::dispatch_layout(d, recv_tokens, h);
    std::vector<float> send(there.send_extent()), recv(there.recv_extent()), done(recv.size()), back(send.size());
    moe::gather_rows(x.data(), h, d, k, send.data());
    c.all_to_allv(send.data(), recv.data(), there, dtl::DType::f32);
    std::size_t row = 0;  // from each source: its rows for my first expert, then my second, ...
    for (int q = 0; q < P; ++q)
      for (int e = 0; e < local; ++e)
        for (std::int64_t n = 0; n < from[std::size_t(q * local + e)]; ++n, ++row)
          run_expert(c.rank() * local + e, recv.data() + row * h, done.data() + row * h, std::size_t(h));
    const dtl::AllToAllvLayout home = dtl::packed_all_to_allv(there.recv_counts, there.send_counts);  // the way back
    c.all_to_allv(done.data(), back.data(), home, dtl::DType::f32);
    std::vector<float> out(x.size(), 0.0f), want(x.size(), 0.0f);
    moe::combine_rows(back.data(), h, d, r, out.data());
    for (int slot : d.send_order) {  // one rank: the same kept slots, in the same order
      const int t = slot / k;
      for (int i = 0; i < h; ++i)
        want[std::size_t(t * h + i)] +=
            r.weight[std::size_t(slot)] * (x[std::size_t(t * h + i)] * float(r.expert[std::size_t(slot)] + 1));
    }
    float worst = 0;
    for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - want[i]));
    EXPECT_EQ(worst, 0.0f) << "rank " << c.rank() << ": largest difference from one rank " << worst;
    EXPECT_GT(d.send_order.size(), 0u);
  });
}
