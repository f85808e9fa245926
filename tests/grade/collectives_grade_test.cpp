// Graded tests of the collectives exercises (exercises/collectives.h).
//
// Each suite grades one exercise (the grader maps RingReduceScatter → ring_reduce_scatter).
// Inputs are crafted so every summation order gives the same bits; results are compared
// element by element with a single-process reference; the communication pattern (bytes,
// messages, neighbours, steps) is read from the trace events, so calling the library
// all_reduce instead of building the algorithm does not pass.
#include <cmath>
#include <cstring>
#include <random>

#include "core/comm/chunking.h"
#include "core/theory/collectives.h"
#include "exercises/collectives.h"
#include "labs/collectives/crafted.h"
#include "tests/grade/grade_util.h"

using namespace dtl;
using grade::kGradedCounts;
using grade::kGradedWorldSizes;

namespace {

std::vector<float> crafted(int rank, std::size_t n) {
  std::vector<float> v(n);
  fill_crafted(v.data(), n, DType::f32, rank);
  return v;
}

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::vector<double> reference(int P, std::size_t n, ReduceOp op) {
  std::vector<double> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = crafted_expected(i, P, op, DType::f32);
  return want;
}

std::size_t chunk_bytes(std::size_t n, int P, int c) { return chunk_range(n, P, mod(c, P)).count * 4; }

std::string where(int P, std::size_t n) { return "P=" + std::to_string(P) + " count=" + std::to_string(n); }

// Runs an in-place all-reduce exercise everywhere and checks every rank's result.
grade::GradedRun all_reduce_everywhere(int P, std::size_t n, ReduceOp op,
                                       const std::function<void(Comm&, ex::BufferView, ReduceOp)>& fn) {
  std::vector<std::vector<float>> out(static_cast<std::size_t>(P));
  grade::GradedRun run = grade::run_graded(P, [&](Comm& c) {
    std::vector<float> v = crafted(c.rank(), n);
    fn(c, {v.data(), n, DType::f32}, op);
    out[std::size_t(c.rank())] = v;
  });
  if (run.error.empty()) {
    const auto want = reference(P, n, op);
    for (int r = 0; r < P; ++r)
      EXPECT_TRUE(grade::same_values(as_double(out[std::size_t(r)]), want, where(P, n) + " rank " + std::to_string(r)));
  }
  return run;
}

}  // namespace

// ---- exercise 0: naive ---------------------------------------------------------------

TEST(NaiveAllReduce, MatchesReferenceAndGoesThroughRankZero) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const auto run = all_reduce_everywhere(P, n, ReduceOp::sum, ex::naive_all_reduce);
      DTL_ASSERT_RAN(run, where(P, n));
      EXPECT_EQ(run.ranks[0].bytes_sent, double((P - 1) * n * 4)) << where(P, n);
      for (int r = 1; r < P; ++r) {
        EXPECT_EQ(run.ranks[std::size_t(r)].sent_to, std::set<int>{0}) << "rank " << r << " must talk only to rank 0";
        EXPECT_EQ(run.ranks[std::size_t(r)].bytes_sent, double(n * 4));
      }
    }
}

TEST(NaiveAllReduce, AveragesOnce) {
  const auto run = all_reduce_everywhere(5, 100, ReduceOp::avg, ex::naive_all_reduce);
  DTL_ASSERT_RAN(run, "avg");
}

// ---- exercise 1: ring reduce-scatter ---------------------------------------------------

TEST(RingReduceScatter, OwnChunkHoldsTheFullReduction) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      std::vector<std::vector<float>> out(static_cast<std::size_t>(P));
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> v = crafted(c.rank(), n);
        ex::ring_reduce_scatter(c, {v.data(), n, DType::f32}, ReduceOp::sum);
        out[std::size_t(c.rank())] = v;
      });
      DTL_ASSERT_RAN(run, where(P, n));
      const auto want = reference(P, n, ReduceOp::sum);
      for (int r = 0; r < P; ++r) {
        const ChunkRange mine = chunk_range(n, P, r);
        std::vector<double> got(out[std::size_t(r)].begin() + std::ptrdiff_t(mine.offset),
                                out[std::size_t(r)].begin() + std::ptrdiff_t(mine.offset + mine.count));
        std::vector<double> ref(want.begin() + std::ptrdiff_t(mine.offset), want.begin() + std::ptrdiff_t(mine.offset + mine.count));
        EXPECT_TRUE(grade::same_values(got, ref, where(P, n) + " rank " + std::to_string(r) + " chunk " + std::to_string(r)));
      }
    }
}

TEST(RingReduceScatter, SendsEveryChunkButItsOwnOnlyToTheRight) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> v = crafted(c.rank(), n);
        ex::ring_reduce_scatter(c, {v.data(), n, DType::f32}, ReduceOp::sum);
      });
      DTL_ASSERT_RAN(run, where(P, n));
      for (int r = 0; r < P; ++r) {
        const auto& p = run.ranks[std::size_t(r)];
        EXPECT_EQ(p.bytes_sent, double(n * 4 - chunk_bytes(n, P, r))) << where(P, n) << " rank " << r;
        EXPECT_EQ(p.messages_sent, P - 1) << "one message per step, P-1 steps";
        EXPECT_EQ(p.sent_to, std::set<int>{mod(r + 1, P)}) << "rank " << r << " must send only to its right neighbour";
        EXPECT_TRUE(p.collectives.empty()) << "use point-to-point, not the library collectives";
      }
    }
}

// ---- exercise 2: ring all-gather ------------------------------------------------------

TEST(RingAllGather, EveryRankEndsWithEveryChunk) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      std::vector<std::vector<float>> out(static_cast<std::size_t>(P));
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> v(n, -1000.0f);  // only my own chunk is valid at the start
        const ChunkRange mine = chunk_range(n, c.size(), c.rank());
        for (std::size_t i = mine.offset; i < mine.offset + mine.count; ++i) v[i] = float(crafted_value(c.rank(), i));
        ex::ring_all_gather(c, {v.data(), n, DType::f32});
        out[std::size_t(c.rank())] = v;
      });
      DTL_ASSERT_RAN(run, where(P, n));
      std::vector<double> want(n);
      for (int c = 0; c < P; ++c) {
        const ChunkRange cr = chunk_range(n, P, c);
        for (std::size_t i = cr.offset; i < cr.offset + cr.count; ++i) want[i] = crafted_value(c, i);
      }
      for (int r = 0; r < P; ++r) {
        EXPECT_TRUE(grade::same_values(as_double(out[std::size_t(r)]), want, where(P, n) + " rank " + std::to_string(r)));
        const auto& p = run.ranks[std::size_t(r)];
        EXPECT_EQ(p.bytes_sent, double(n * 4 - chunk_bytes(n, P, r + 1))) << where(P, n) << " rank " << r;
        EXPECT_EQ(p.sent_to, std::set<int>{mod(r + 1, P)});
      }
    }
}

// ---- exercise 3: ring all-reduce -----------------------------------------------------

TEST(RingAllReduce, MatchesReferenceBitForBit) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts)
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) DTL_ASSERT_RAN(all_reduce_everywhere(P, n, op, ex::ring_all_reduce), where(P, n));
}

TEST(RingAllReduce, SendsTwoPMinusOneOverPTimesNInTwoPMinusOneSteps) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const auto run = all_reduce_everywhere(P, n, ReduceOp::sum, ex::ring_all_reduce);
      DTL_ASSERT_RAN(run, where(P, n));
      for (int r = 0; r < P; ++r) {
        const auto& p = run.ranks[std::size_t(r)];
        // 2N - |chunk r| - |chunk r+1|; with P | n this is exactly 2(P-1)/P · N.
        EXPECT_EQ(p.bytes_sent, double(2 * n * 4 - chunk_bytes(n, P, r) - chunk_bytes(n, P, r + 1))) << where(P, n) << " rank " << r;
        if (n % std::size_t(P) == 0) {
          EXPECT_EQ(p.bytes_sent, 2.0 * (P - 1) / P * double(n * 4));
        }
        EXPECT_EQ(p.messages_sent, 2 * (P - 1)) << "2(P-1) steps, one message each";
        EXPECT_EQ(int(p.tags.size()), 2 * (P - 1)) << "one tag per step (kTagRingReduceScatter + s, kTagRingAllGather + s)";
        EXPECT_EQ(p.sent_to, std::set<int>{mod(r + 1, P)}) << "rank " << r << " must send only to its right neighbour";
        EXPECT_TRUE(p.collectives.empty()) << "build it from send/recv: calling a library collective does not count";
      }
    }
}

TEST(RingAllReduce, AverageIsDividedOnce) {
  DTL_ASSERT_RAN(all_reduce_everywhere(4, 1003, ReduceOp::avg, ex::ring_all_reduce), "avg");
}

// ---- exercise 4: AllReduce == AllGather ∘ ReduceScatter -------------------------------

TEST(AllReduceByReduceScatterAllGather, SameBitsAsLibraryAllReduceOnRandomInput) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      int differing = 0;
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::mt19937 rng(7u * unsigned(c.rank()) + 1u);
        std::uniform_real_distribution<float> dist(-1, 1);
        std::vector<float> a(n), b;
        for (auto& x : a) x = dist(rng);
        b = a;
        ex::all_reduce_by_reduce_scatter_all_gather(c, {a.data(), n, DType::f32}, ReduceOp::sum);
        c.all_reduce(b.data(), b.data(), n, DType::f32, ReduceOp::sum);
        if (std::memcmp(a.data(), b.data(), n * 4) != 0) differing = 1;
      });
      DTL_ASSERT_RAN(run, where(P, n));
      EXPECT_EQ(differing, 0) << where(P, n) << ": not bit-identical to the library all_reduce";
      const auto& names = run.ranks[0].collectives;
      EXPECT_NE(std::find(names.begin(), names.end(), "reduce_scatter"), names.end()) << "use comm.reduce_scatter";
      EXPECT_NE(std::find(names.begin(), names.end(), "all_gather"), names.end()) << "use comm.all_gather";
      EXPECT_EQ(std::count(names.begin(), names.end(), "all_reduce"), 1) << "only the reference may call all_reduce";
    }
}

// ---- exercise 5: binomial trees ---------------------------------------------------------

namespace {
// Children of relative rank vr in a binomial broadcast over P ranks.
int children(int vr, int P) {
  int limit = 1;
  while (limit < P) limit <<= 1;
  const int low = vr == 0 ? limit : (vr & -vr);
  int n = 0;
  for (int m = low >> 1; m > 0; m >>= 1) n += vr + m < P;
  return n;
}
}  // namespace

TEST(TreeBroadcast, EveryRankGetsTheRootsDataInLogSteps) {
  for (int P : kGradedWorldSizes)
    for (int root : {0, P - 1}) {
      const std::size_t n = 40;
      std::vector<std::vector<float>> out(static_cast<std::size_t>(P));
      const auto run = grade::run_graded(P, [&](Comm& c) {
        std::vector<float> v = c.rank() == root ? crafted(root, n) : std::vector<float>(n, 0.0f);
        ex::tree_broadcast(c, {v.data(), n, DType::f32}, root);
        out[std::size_t(c.rank())] = v;
      });
      DTL_ASSERT_RAN(run, where(P, n) + " root " + std::to_string(root));
      for (int r = 0; r < P; ++r) {
        EXPECT_TRUE(grade::same_values(as_double(out[std::size_t(r)]), as_double(crafted(root, n)), "rank " + std::to_string(r)));
        const int vr = mod(r - root, P);
        EXPECT_EQ(run.ranks[std::size_t(r)].messages_sent, children(vr, P)) << "rank " << r << " (relative " << vr << ")";
      }
    }
}

TEST(TreeAllReduce, MatchesReferenceWithBinomialTraffic) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : kGradedCounts) {
      const auto run = all_reduce_everywhere(P, n, ReduceOp::sum, ex::tree_all_reduce);
      DTL_ASSERT_RAN(run, where(P, n));
      for (int r = 0; r < P; ++r) {
        const int expected_messages = (r == 0 ? 0 : 1) + children(r, P);  // reduce to parent + broadcast to children
        EXPECT_EQ(run.ranks[std::size_t(r)].messages_sent, expected_messages) << where(P, n) << " rank " << r;
      }
      EXPECT_EQ(run.ranks[0].bytes_sent, double(theory::ceil_log2(P) * n * 4));
    }
}

// ---- exercise 6: recursive halving-doubling ------------------------------------------

TEST(RhdAllReduce, MatchesReferenceForAnyWorldSize) {
  for (int P : {2, 3, 4, 5, 6, 7, 8})
    for (std::size_t n : kGradedCounts)
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) DTL_ASSERT_RAN(all_reduce_everywhere(P, n, op, ex::rhd_all_reduce), where(P, n));
}

TEST(RhdAllReduce, PowerOfTwoUsesLogSteps) {
  for (int P : {2, 4, 8}) {
    const std::size_t n = 64 * std::size_t(P);
    const auto run = all_reduce_everywhere(P, n, ReduceOp::sum, ex::rhd_all_reduce);
    DTL_ASSERT_RAN(run, where(P, n));
    const int log2p = theory::ceil_log2(P);
    for (int r = 0; r < P; ++r) {
      const auto& p = run.ranks[std::size_t(r)];
      EXPECT_EQ(p.bytes_sent, 2.0 * (P - 1) / P * double(n * 4)) << "same bytes as the ring, rank " << r;
      EXPECT_EQ(p.messages_sent, 2 * log2p) << "2·log2 P steps, rank " << r;
      std::set<int> partners;
      for (int m = 1; m < P; m <<= 1) partners.insert(r ^ m);
      EXPECT_EQ(p.sent_to, partners) << "partners are rank XOR 2^k";
    }
  }
}

// ---- exercise 7: the cost calculator ---------------------------------------------------

TEST(AllReduceCost, AgreesWithTheory) {
  struct Q {
    double params, bpp;
    int gpus;
    double bw, lat_us, compute;
  };
  // The curriculum's questions: 7B fp16 on 8 GPUs over NVLink (600 GB/s); 200 MB on 16
  // GPUs at 100 GB/s; plus latency-bound and single-GPU cases.
  for (const Q& q : {Q{7e9, 2, 8, 600, 0, 0.5}, Q{100e6, 2, 16, 100, 0, 0.01}, Q{1e6, 4, 64, 25, 5, 0.001},
                     Q{1e9, 2, 1, 50, 10, 1.0}}) {
    ex::AllReduceQuestion in{q.params, q.bpp, q.gpus, q.bw, q.lat_us, q.compute};
    ex::AllReduceAnswer a;
    try {
      a = ex::all_reduce_cost(in);
    } catch (const std::exception& e) {
      FAIL() << e.what();
    }
    const double bytes = q.params * q.bpp;
    const theory::CommCost c = theory::all_reduce_cost(theory::Algo::ring, q.gpus, bytes, {q.lat_us * 1e-6, q.bw * 1e9});
    EXPECT_NEAR(a.bytes_sent_per_gpu, c.bytes_per_rank, 1e-9 * bytes + 1e-9) << q.gpus << " GPUs";
    EXPECT_NEAR(a.time_s, c.time_s, 1e-9 * c.time_s + 1e-15) << q.gpus << " GPUs";
    EXPECT_NEAR(a.efficiency, theory::comm_efficiency(q.compute, c.time_s), 1e-9) << q.gpus << " GPUs";
  }
  // The curriculum's 7B example: about 41 ms per all-reduce.
  EXPECT_NEAR(ex::all_reduce_cost({7e9, 2, 8, 600, 0, 0}).time_s, 0.0408, 5e-4);
}
