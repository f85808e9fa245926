// Graded tests of the context-parallel exercises (exercises/context_parallel.h): the
// online-softmax merge against a float64 softmax over every key (both orders, empty sides,
// large scores), the zig-zag split against worked examples and its equal causal work, and
// one ring step on 2 to 4 thread ranks — which chunk each step computed, and from the trace
// that each hop was posted before its block. Each failure says which case and by how much.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "core/trace/trace.h"
#include "exercises/context_parallel.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {

constexpr float kEmpty = -std::numeric_limits<float>::infinity();

struct Problem {  // `pairs` query rows, K keys, values of d features
  int pairs, keys, d;
  std::vector<double> score, value;  // [pairs × keys], [keys × d]
};

Problem random_problem(int pairs, int keys, int d, unsigned seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> n(0.0, scale);
  Problem p{pairs, keys, d, std::vector<double>(std::size_t(pairs * keys)), std::vector<double>(std::size_t(keys * d))};
  for (double& s : p.score) s = n(gen);
  for (double& v : p.value) v = n(gen) / scale;
  return p;
}

struct Partial {
  std::vector<float> o, m, l;
};

// The partial result over the keys with in_set[k], computed in float64 and stored as floats.
Partial partial_of(const Problem& p, const std::vector<bool>& in_set) {
  Partial r{std::vector<float>(std::size_t(p.pairs * p.d), 0.0f), std::vector<float>(std::size_t(p.pairs), kEmpty),
            std::vector<float>(std::size_t(p.pairs), 0.0f)};
  for (int i = 0; i < p.pairs; ++i) {
    double top = -INFINITY, sum = 0;
    for (int k = 0; k < p.keys; ++k)
      if (in_set[std::size_t(k)]) top = std::max(top, p.score[std::size_t(i * p.keys + k)]);
    if (top == -INFINITY) continue;
    std::vector<double> o(std::size_t(p.d), 0.0);
    for (int k = 0; k < p.keys; ++k) {
      if (!in_set[std::size_t(k)]) continue;
      const double w = std::exp(p.score[std::size_t(i * p.keys + k)] - top);
      sum += w;
      for (int f = 0; f < p.d; ++f) o[std::size_t(f)] += w * p.value[std::size_t(k * p.d + f)];
    }
    r.m[std::size_t(i)] = float(top), r.l[std::size_t(i)] = float(sum);
    for (int f = 0; f < p.d; ++f) r.o[std::size_t(i * p.d + f)] = float(o[std::size_t(f)]);
  }
  return r;
}

// The largest relative difference of o / l from softmax(score)·V over all keys, in float64.
double worst_against_softmax(const Problem& p, const Partial& r) {
  double worst = 0;
  const Partial all = partial_of(p, std::vector<bool>(std::size_t(p.keys), true));
  for (int i = 0; i < p.pairs; ++i)
    for (int f = 0; f < p.d; ++f) {
      const double want = double(all.o[std::size_t(i * p.d + f)]) / all.l[std::size_t(i)];
      const double got = double(r.o[std::size_t(i * p.d + f)]) / r.l[std::size_t(i)];
      worst = std::max(worst, std::fabs(got - want) / std::max(1.0, std::fabs(want)));
      if (!std::isfinite(got)) return INFINITY;
    }
  return worst;
}

void merge(Partial& a, const Partial& b, const Problem& p) {
  ex::online_softmax_merge(a.o.data(), a.m.data(), a.l.data(), b.o.data(), b.m.data(), b.l.data(), p.pairs, p.d);
}

void expect_merges_to_softmax(double scale, unsigned seed) {
  const Problem p = random_problem(12, 40, 8, seed, scale);
  std::mt19937 gen(seed + 1);
  std::vector<bool> first(std::size_t(p.keys));
  for (std::size_t k = 0; k < first.size(); ++k) first[k] = gen() % 2 == 0;
  std::vector<bool> second(first.size());
  for (std::size_t k = 0; k < first.size(); ++k) second[k] = !first[k];
  Partial ab = partial_of(p, first), ba = partial_of(p, second);
  merge(ab, partial_of(p, second), p);
  merge(ba, partial_of(p, first), p);
  const double d_ab = worst_against_softmax(p, ab), d_ba = worst_against_softmax(p, ba);
  std::printf("scores of scale %g: merged A then B %.2e, B then A %.2e from the float64 softmax\n", scale, d_ab, d_ba);
  EXPECT_LE(d_ab, 1e-5) << "merging the second key set into the first";
  EXPECT_LE(d_ba, 1e-5) << "merging the first key set into the second";
}

}  // namespace

TEST(OnlineSoftmaxMerge, TwoKeySetsEqualTheSoftmaxOverAllKeys) { expect_merges_to_softmax(1.0, 7); }

TEST(OnlineSoftmaxMerge, LargeScoresDoNotOverflow) { expect_merges_to_softmax(300.0, 11); }

TEST(OnlineSoftmaxMerge, AnEmptySideChangesNothingAndMakesNoNaN) {
  const Problem p = random_problem(5, 9, 4, 3, 1.0);
  const Partial full = partial_of(p, std::vector<bool>(std::size_t(p.keys), true));
  const Partial empty = partial_of(p, std::vector<bool>(std::size_t(p.keys), false));
  Partial a = full, b = empty, c = empty;
  merge(a, empty, p);  // the empty side on the right
  merge(b, full, p);   // and on the left
  merge(c, empty, p);  // both empty
  const auto same = [](const Partial& x, const Partial& y) {
    return std::memcmp(x.o.data(), y.o.data(), x.o.size() * 4) == 0 &&
           std::memcmp(x.m.data(), y.m.data(), x.m.size() * 4) == 0 &&
           std::memcmp(x.l.data(), y.l.data(), x.l.size() * 4) == 0;
  };
  EXPECT_TRUE(same(a, full)) << "merging a partial result that has seen no key must leave the other as it was";
  EXPECT_TRUE(same(b, full)) << "an empty result merged with a full one must become that one, exactly";
  for (std::size_t i = 0; i < c.m.size(); ++i) {
    EXPECT_EQ(c.m[i], kEmpty) << "two empty results stay empty (pair " << i << ")";
    EXPECT_EQ(c.l[i], 0.0f) << "pair " << i << ": a sum of nothing is 0, not NaN";
  }
  for (std::size_t i = 0; i < c.o.size(); ++i)
    EXPECT_EQ(c.o[i], 0.0f) << "two empty results: output value " << i << " stays 0";
}

TEST(ZigzagPartition, WorkedByHand) {
  EXPECT_EQ(ex::zigzag_partition(16, 2, 0), (std::vector<int>{0, 1, 2, 3, 12, 13, 14, 15}));
  EXPECT_EQ(ex::zigzag_partition(16, 2, 1), (std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(ex::zigzag_partition(12, 3, 0), (std::vector<int>{0, 1, 10, 11}));
  EXPECT_EQ(ex::zigzag_partition(12, 3, 1), (std::vector<int>{2, 3, 8, 9}));
  EXPECT_EQ(ex::zigzag_partition(12, 3, 2), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(ex::zigzag_partition(8, 1, 0), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(ZigzagPartition, CoversEveryPositionOnceWithEqualCausalWork) {
  for (int P = 1; P <= 8; ++P)
    for (int chunk : {1, 3, 8}) {
      const int S = 2 * P * chunk;
      std::multiset<int> seen;
      std::vector<std::int64_t> pairs;
      for (int r = 0; r < P; ++r) {
        const std::vector<int> pos = ex::zigzag_partition(S, P, r);
        EXPECT_TRUE(std::is_sorted(pos.begin(), pos.end()))
            << "S " << S << ", P " << P << ", rank " << r << ": ascending";
        EXPECT_EQ(pos.size(), std::size_t(S / P)) << "S " << S << ", P " << P << ", rank " << r;
        std::int64_t work = 0;
        for (int q : pos) seen.insert(q), work += q + 1;  // a query at q attends to keys 0..q
        pairs.push_back(work);
      }
      for (int q = 0; q < S; ++q) EXPECT_EQ(seen.count(q), 1u) << "S " << S << ", P " << P << ": position " << q;
      EXPECT_EQ(*std::min_element(pairs.begin(), pairs.end()), *std::max_element(pairs.begin(), pairs.end()))
          << "S " << S << ", P " << P << ": every rank does the same causal work";
    }
}

namespace {

// Each rank starts with a chunk full of its own rank number and runs P ring steps; what each
// step's compute saw, per rank, and when each compute began (the trace's clock).
struct RingRun {
  std::vector<std::vector<int>> seen;
  std::vector<std::vector<std::int64_t>> began;
};

RingRun run_ring(int P, Trace* trace, int tag) {
  RingRun run{std::vector<std::vector<int>>(std::size_t(P)), std::vector<std::vector<std::int64_t>>(std::size_t(P))};
  test::run_ranks(
      P,
      [&](Comm& comm) {
        std::vector<float> current(64, float(comm.rank())), next(64, -1.0f);
        for (int t = 0; t < P; ++t)
          ex::ring_step(comm, current, next, tag + t, TransferInfo{.step = t}, t + 1 == P, [&](const float* chunk) {
            run.began[std::size_t(comm.rank())].push_back(trace ? trace->now_ns() : 0);
            const bool whole = std::all_of(chunk, chunk + 64, [&](float v) { return v == chunk[0]; });
            run.seen[std::size_t(comm.rank())].push_back(whole ? int(chunk[0]) : -1);
          });
      },
      trace);
  return run;
}

}  // namespace

TEST(RingStep, EachStepComputesTheChunkOfTheRankBehind) {
  for (int P : {2, 3, 4}) {
    const RingRun run = run_ring(P, nullptr, 500);
    for (int r = 0; r < P; ++r) {
      std::vector<int> want;
      for (int t = 0; t < P; ++t) want.push_back(((r - t) % P + P) % P);
      EXPECT_EQ(run.seen[std::size_t(r)], want)
          << P << " ranks, rank " << r << ": step t computes the chunk of rank r − t (−1: a chunk that was torn)";
    }
  }
}

TEST(RingStep, PostsEachHopBeforeItsBlockAndNoneAtTheLastStep) {
  for (int P : {2, 4}) {
    Trace trace(P);
    const RingRun run = run_ring(P, &trace, 600);
    for (int r = 0; r < P; ++r) {
      ASSERT_EQ(run.began[std::size_t(r)].size(), std::size_t(P))
          << P << " ranks, rank " << r << ": compute runs once per step";
      const EventLog& log = trace.log(r, kStreamMain);
      for (int t = 0; t < P; ++t) {
        std::int64_t posted = -1, sent = -1;  // when the hop's receive and send were posted
        for (std::size_t i = 0; i < log.size(); ++i) {
          if (log[i].kind == EventKind::recv && log[i].tag == 600 + t) posted = log[i].begin_ns;
          if (log[i].kind == EventKind::send && log[i].tag == 600 + t) sent = log[i].begin_ns;
        }
        if (t + 1 == P) {
          EXPECT_EQ(posted, -1) << P << " ranks, rank " << r << ": the last step passes nothing on";
          continue;
        }
        ASSERT_GE(posted, 0) << P << " ranks, rank " << r << ": no receive with tag " << 600 + t << " at step " << t;
        EXPECT_LE(posted, run.began[std::size_t(r)][std::size_t(t)])
            << P << " ranks, rank " << r << ", step " << t
            << ": post the receive before computing, so the hop overlaps the block";
        EXPECT_GE(sent, 0) << P << " ranks, rank " << r << ": no send with tag " << 600 + t;
        EXPECT_LE(sent, run.began[std::size_t(r)][std::size_t(t)])
            << P << " ranks, rank " << r << ", step " << t << ": post the send before computing too";
      }
    }
  }
}
