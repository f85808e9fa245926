// Library collectives of the threads backend against a local float64 reference: every
// world size, uneven counts, every op, in place and out of place, async, sub-groups.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/comm/chunking.h"
#include "tests/test_util.h"

using namespace dtl;

namespace {
// Rank r's element i: exact in float, so any summation order gives the same bits.
double value(int r, std::size_t i) { return double((r * 5 + int(i % 11)) % 9) - 4; }

double reduced(int P, std::size_t i, ReduceOp op) {
  double acc = value(0, i);
  for (int r = 1; r < P; ++r)
    acc = op == ReduceOp::max   ? std::max(acc, value(r, i))
          : op == ReduceOp::min ? std::min(acc, value(r, i))
                                : acc + value(r, i);
  return op == ReduceOp::avg ? acc / P : acc;
}
}  // namespace

TEST(LibraryCollectives, AllReduceMatchesReferenceForEverySizeAndOp) {
  for (int P : test::kWorldSizes)
    for (std::size_t n : {std::size_t(1), std::size_t(13), std::size_t(5000)})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
        for (bool in_place : {false, true})
          test::run_ranks(P, [=](Comm& c) {
            std::vector<double> in(n), out(n, -99);
            for (std::size_t i = 0; i < n; ++i) in[i] = value(c.rank(), i);
            double* dst = in_place ? in.data() : out.data();
            c.all_reduce(in.data(), dst, n, DType::f64, op);
            double worst = 0;
            for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(dst[i] - reduced(P, i, op)));
            EXPECT_EQ(worst, 0.0) << "P=" << P << " n=" << n << " op=" << reduce_op_name(op) << " in_place=" << in_place
                                  << " largest difference " << worst;
          });
}

TEST(LibraryCollectives, AllReduceFloatIsBitIdenticalOnEveryRank) {
  test::run_ranks(4, [](Comm& c) {
    std::vector<float> v(1001);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * float(c.rank() + 1) + 1e-3f * float(i);
    c.all_reduce(v.data(), v.data(), v.size(), DType::f32, ReduceOp::sum);
    std::vector<float> rank0 = v;
    c.broadcast(rank0.data(), rank0.size(), DType::f32, 0);
    EXPECT_EQ(std::memcmp(rank0.data(), v.data(), v.size() * 4), 0) << "rank " << c.rank() << " differs from rank 0";
  });
}

TEST(LibraryCollectives, ReduceScatterGivesEachRankItsBlock) {
  for (int P : test::kWorldSizes)
    test::run_ranks(P, [P](Comm& c) {
      const std::size_t block = 37;
      std::vector<double> in(block * std::size_t(P)), out(block);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = value(c.rank(), i);
      c.reduce_scatter(in.data(), out.data(), block, DType::f64, ReduceOp::sum);
      for (std::size_t i = 0; i < block; ++i)
        ASSERT_EQ(out[i], reduced(P, std::size_t(c.rank()) * block + i, ReduceOp::sum)) << "P=" << P << " i=" << i;
    });
}

TEST(LibraryCollectives, AllGatherConcatenatesInRankOrder) {
  for (int P : test::kWorldSizes)
    for (bool in_place : {false, true})
      test::run_ranks(P, [P, in_place](Comm& c) {
        const std::size_t n = 9;
        std::vector<std::int64_t> out(n * std::size_t(P), -1), mine(n);
        for (std::size_t i = 0; i < n; ++i) mine[i] = c.rank() * 100 + std::int64_t(i);
        const std::int64_t* src = mine.data();
        if (in_place) {  // NCCL's in-place form: my input is already block `rank` of the output
          std::copy(mine.begin(), mine.end(), out.begin() + std::ptrdiff_t(std::size_t(c.rank()) * n));
          src = out.data() + std::size_t(c.rank()) * n;
        }
        c.all_gather(src, out.data(), n, DType::i64);
        for (int q = 0; q < P; ++q)
          for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[std::size_t(q) * n + i], q * 100 + std::int64_t(i));
      });
}

TEST(LibraryCollectives, BroadcastAndReduceFromEveryRoot) {
  for (int P : {1, 3, 4}) {
    for (int root = 0; root < P; ++root) {
      test::run_ranks(P, [P, root](Comm& c) {
        std::vector<std::int32_t> b(50, c.rank() == root ? 7 : 0);
        c.broadcast(b.data(), b.size(), DType::i32, root);
        for (auto x : b) ASSERT_EQ(x, 7);
        std::vector<double> in(50), out(50, 0);
        for (std::size_t i = 0; i < 50; ++i) in[i] = value(c.rank(), i);
        c.reduce(in.data(), out.data(), 50, DType::f64, ReduceOp::sum, root);
        if (c.rank() == root) {
          for (std::size_t i = 0; i < 50; ++i) ASSERT_EQ(out[i], reduced(P, i, ReduceOp::sum));
        }
      });
    }
  }
}

TEST(LibraryCollectives, AllToAllTransposesBlocks) {
  for (int P : test::kWorldSizes)
    test::run_ranks(P, [P](Comm& c) {
      const std::size_t n = 3;
      std::vector<std::int32_t> in(n * std::size_t(P)), out(n * std::size_t(P));
      for (int q = 0; q < P; ++q)
        for (std::size_t i = 0; i < n; ++i) in[std::size_t(q) * n + i] = c.rank() * 1000 + q * 10 + int(i);
      c.all_to_all(in.data(), out.data(), n, DType::i32);
      for (int q = 0; q < P; ++q)  // block q came from rank q and was addressed to me
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[std::size_t(q) * n + i], q * 1000 + c.rank() * 10 + int(i));
    });
}

// Uneven blocks, as an MoE dispatch sends them: rank r sends (r + 2q) mod 4 elements to q
// (zero included), packed; each receives into blocks placed in reverse rank order with a gap
// of one element between them, which must stay untouched. Checked against the value each
// sender wrote for that receiver (sender·1000 + receiver·10 + i).
TEST(LibraryCollectives, AllToAllvMovesUnevenBlocksToTheirPlaces) {
  for (int P : test::kWorldSizes)
    test::run_ranks(P, [P](Comm& c) {
      const int me = c.rank();
      auto count = [](int from, int to) { return std::size_t((from + 2 * to) % 4); };
      std::vector<std::size_t> send_counts, recv_counts;
      for (int q = 0; q < P; ++q) send_counts.push_back(count(me, q)), recv_counts.push_back(count(q, me));
      AllToAllvLayout l = packed_all_to_allv(send_counts, recv_counts);
      std::size_t at = 0;
      for (int q = P - 1; q >= 0; --q) l.recv_displs[std::size_t(q)] = at, at += recv_counts[std::size_t(q)] + 1;
      std::vector<std::int32_t> in(l.send_extent()), out(l.recv_extent() + 1, -7);
      for (int q = 0; q < P; ++q)
        for (std::size_t i = 0; i < send_counts[std::size_t(q)]; ++i)
          in[l.send_displs[std::size_t(q)] + i] = me * 1000 + q * 10 + int(i);
      c.all_to_allv(in.data(), out.data(), l, DType::i32);
      for (int q = 0; q < P; ++q) {
        const std::size_t d = l.recv_displs[std::size_t(q)], n = recv_counts[std::size_t(q)];
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[d + i], q * 1000 + me * 10 + int(i)) << "from rank " << q;
        ASSERT_EQ(out[d + n], -7) << "the gap after rank " << q << "'s block was written";
      }
      EXPECT_EQ(l.sent(), [&] {
        std::size_t s = 0;
        for (auto n : send_counts) s += n;
        return s;
      }());
      EXPECT_EQ(l.sent_to_others(me), l.sent() - count(me, me));
    });
}

// Rank 0 expects one element more from rank 1 than rank 1 sends: rank 0 fails, naming the
// pair, and no rank waits for the watchdog.
TEST(LibraryCollectives, AllToAllvCountsThatDisagreeAreAnErrorNamingThePair) {
  ThreadsOptions opt;
  opt.world_size = 3;
  opt.timeout_s = 5;
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run_threads(opt, [](Comm& c) {
    std::vector<std::size_t> counts(3, 2), expect(3, 2);
    if (c.rank() == 0) expect[1] = 3;
    const AllToAllvLayout l = packed_all_to_allv(counts, expect);
    std::vector<float> in(6, 1.0f), out(l.recv_extent(), 0.0f);
    c.all_to_allv(in.data(), out.data(), l, DType::f32);
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.failed_rank, 0);
  EXPECT_NE(r.error.find("rank 1 sends 2 elements to rank 0, which expects 3"), std::string::npos) << r.error;
  const RunResult wrong_size = run_threads(opt, [](Comm& c) {
    std::vector<float> x(4);
    c.all_to_allv(x.data(), x.data() + 2, packed_all_to_allv({1, 1}, {1, 1}), DType::f32);  // 2 counts, 3 ranks
  });
  EXPECT_NE(wrong_size.error.find("one send count"), std::string::npos) << wrong_size.error;
}

TEST(LibraryCollectives, AsyncCollectivesCompleteInIssueOrderWhileTheRankWorks) {
  test::run_ranks(4, [](Comm& c) {
    std::vector<float> a(1000, 1.0f), b(1000, 2.0f);
    Request ra = c.iall_reduce(a.data(), a.data(), a.size(), DType::f32, ReduceOp::sum);
    Request rb = c.iall_reduce(b.data(), b.data(), b.size(), DType::f32, ReduceOp::sum);
    volatile double busy = 0;  // the main thread computes meanwhile
    for (int i = 0; i < 100000; ++i) busy = busy + i;
    rb.wait();
    ra.wait();
    EXPECT_EQ(a[999], 4.0f);
    EXPECT_EQ(b[0], 8.0f);
  });
}

TEST(LibraryCollectives, HalfTypesReduceThroughFloat) {
  test::run_ranks(3, [](Comm& c) {
    std::vector<std::uint16_t> v(10, float_to_bf16(1.5f));
    c.all_reduce(v.data(), v.data(), v.size(), DType::bf16, ReduceOp::sum);
    EXPECT_EQ(bf16_to_float(v[9]), 4.5f);
  });
}

TEST(SubGroups, SplitFormsIndependentGroupsOrderedByKey) {
  for (int P : {2, 4, 7, 8})
    test::run_ranks(P, [P](Comm& c) {
      // Even and odd ranks form two groups; the key reverses the order inside each.
      auto sub = c.split(c.rank() % 2, -c.rank());
      ASSERT_NE(sub, nullptr);
      const int members = (P + 1 - c.rank() % 2) / 2;
      EXPECT_EQ(sub->size(), members);
      EXPECT_EQ(sub->global_rank_of(sub->rank()), c.rank());
      double v = c.rank();
      sub->all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
      double want = 0;
      for (int q = c.rank() % 2; q < P; q += 2) want += q;
      EXPECT_EQ(v, want);
      // Point-to-point inside the group: send my global rank to the next member.
      int out = c.rank(), in = -1;
      const int n = sub->size();
      Request rx = sub->irecv(&in, 4, mod(sub->rank() - 1, n), 0);
      sub->send(&out, 4, mod(sub->rank() + 1, n), 0);
      rx.wait();
      EXPECT_EQ(in, sub->global_rank_of(mod(sub->rank() - 1, n)));
    });
}

TEST(SubGroups, NegativeColorJoinsNoGroup) {
  test::run_ranks(3, [](Comm& c) {
    auto sub = c.split(c.rank() == 1 ? -1 : 0, c.rank());
    if (c.rank() == 1)
      EXPECT_EQ(sub, nullptr);
    else
      EXPECT_EQ(sub->size(), 2);
  });
}
