// Point-to-point on the threads backend: ordering, tag matching, recv_reduce, errors.
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

#include "core/comm/chunking.h"
#include "core/error.h"
#include "tests/test_util.h"

using namespace dtl;

TEST(PointToPoint, RingShiftDeliversEveryRanksData) {
  for (int P : test::kWorldSizes) {
    test::run_ranks(P, [P](Comm& c) {
      std::vector<int> out(100), in(100, -1);
      std::iota(out.begin(), out.end(), c.rank() * 1000);
      Request rx = c.irecv(in.data(), 400, mod(c.rank() - 1, P), 7);
      Request tx = c.isend(out.data(), 400, mod(c.rank() + 1, P), 7);
      rx.wait();
      tx.wait();
      const int from = mod(c.rank() - 1, P);
      for (int i = 0; i < 100; ++i) ASSERT_EQ(in[std::size_t(i)], from * 1000 + i) << "rank " << c.rank() << " i " << i;
    });
  }
}

TEST(PointToPoint, TagsMatchInAnyOrder) {
  // Rank 0 sends tags 1, 2, 3; rank 1 receives them as 3, 1, 2.
  test::run_ranks(2, [](Comm& c) {
    if (c.rank() == 0) {
      std::vector<Request> reqs;
      static const int values[3] = {10, 20, 30};
      for (int t = 0; t < 3; ++t) reqs.push_back(c.isend(&values[t], sizeof(int), 1, t + 1));
      for (auto& r : reqs) r.wait();
    } else {
      int a = 0, b = 0, d = 0;
      c.recv(&d, sizeof d, 0, 3);
      c.recv(&a, sizeof a, 0, 1);
      c.recv(&b, sizeof b, 0, 2);
      EXPECT_EQ(a, 10);
      EXPECT_EQ(b, 20);
      EXPECT_EQ(d, 30);
    }
  });
}

TEST(PointToPoint, SameTagKeepsSendOrder) {
  test::run_ranks(2, [](Comm& c) {
    for (int i = 0; i < 50; ++i) {
      int v = i;
      if (c.rank() == 0)
        c.send(&v, sizeof v, 1, 0);
      else {
        c.recv(&v, sizeof v, 0, 0);
        ASSERT_EQ(v, i);
      }
    }
  });
}

TEST(PointToPoint, RecvReduceCombinesWithoutStaging) {
  test::run_ranks(3, [](Comm& c) {
    std::vector<double> v{1.0 + c.rank(), 2.0 * c.rank()};
    if (c.rank() == 0) {
      c.recv_reduce(v.data(), 2, DType::f64, ReduceOp::sum, 1, 0);
      c.recv_reduce(v.data(), 2, DType::f64, ReduceOp::max, 2, 0);
      EXPECT_EQ(v[0], 3.0);  // max(1 + 2, 3)
      EXPECT_EQ(v[1], 4.0);  // max(0 + 2, 4)
    } else {
      c.send(v.data(), 16, 0, 0);
    }
  });
}

TEST(PointToPoint, ZeroByteMessagesWork) {
  test::run_ranks(2, [](Comm& c) {
    if (c.rank() == 0)
      c.send(nullptr, 0, 1, 5);
    else
      c.recv(nullptr, 0, 0, 5);
  });
}

TEST(PointToPoint, SizeMismatchIsAClearErrorNotAHang) {
  ThreadsOptions opt;
  opt.world_size = 2;
  opt.timeout_s = 10;
  const RunResult r = run_threads(opt, [](Comm& c) {
    char buf[16] = {};
    if (c.rank() == 0)
      c.send(buf, 8, 1, 0);
    else
      c.recv(buf, 16, 0, 0);
  });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("16 bytes"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("8 bytes"), std::string::npos) << r.error;
}

TEST(PointToPoint, BadPeerNamesTheValidRange) {
  ThreadsOptions opt;
  opt.world_size = 2;
  const RunResult r = run_threads(opt, [](Comm& c) {
    int x = 0;
    c.send(&x, 4, 5, 0);
  });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("ranks 0..1"), std::string::npos) << r.error;
}

TEST(PointToPoint, TestPollsUntilComplete) {
  test::run_ranks(2, [](Comm& c) {
    int v = 42;
    if (c.rank() == 1) {
      Request r = c.irecv(&v, 4, 0, 0);
      while (!r.test()) std::this_thread::yield();
      EXPECT_EQ(v, 7);
    } else {
      v = 7;
      c.send(&v, 4, 1, 0);
    }
  });
}
