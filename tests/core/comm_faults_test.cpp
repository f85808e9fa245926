// A failing rank aborts its peers; a hang is turned into an explanation by the watchdog;
// the runner's threads run at the priorities it promises.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/comm/chunking.h"
#include "core/comm/wait_words.h"
#include "core/error.h"
#include "tests/test_util.h"

using namespace dtl;
using Clock = std::chrono::steady_clock;

TEST(Abort, ThrowingRankStopsEveryPeerWithinASecond) {
  for (int P : {2, 4, 8}) {
    ThreadsOptions opt;
    opt.world_size = P;
    opt.timeout_s = 30;
    const auto t0 = Clock::now();
    const RunResult r = run_threads(opt, [](Comm& c) {
      if (c.rank() == 1) throw std::runtime_error("boom in the forward pass");
      float x = 0;
      c.recv(&x, 4, mod(c.rank() + 1, c.size()), 0);  // would wait forever
    });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_LT(s, 1.0) << "P=" << P;
    EXPECT_EQ(r.failed_rank, 1);
    EXPECT_NE(r.error.find("boom in the forward pass"), std::string::npos) << r.error;
    for (int q = 0; q < P; ++q) {
      if (q == 1) continue;
      EXPECT_NE(r.rank_errors[std::size_t(q)].find("rank 1 failed"), std::string::npos)
          << r.rank_errors[std::size_t(q)];
    }
  }
}

TEST(Abort, PeersBlockedInACollectiveAreReleased) {
  ThreadsOptions opt;
  opt.world_size = 4;
  const auto t0 = Clock::now();
  const RunResult r = run_threads(opt, [](Comm& c) {
    if (c.rank() == 3) throw dtl::Error("rank 3 cannot allocate");
    double v = 1;
    c.all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
  });
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
  EXPECT_EQ(r.failed_rank, 3);
}

// A rank fails before its first collective while a peer has several queued: the peer's
// comm stream leaves the first by the abort, and must leave the next ones the same way.
// (Its one arrival used to count for the next barrier, which then completed without the
// failed rank and read its empty slot: SIGSEGV, found by `run zero --stage 1
// --inject-fault 1:1`.) Every collective kind that reads its peers' buffers.
TEST(Abort, QueuedCollectivesOfAFailedGroupNeverReadItsBuffers) {
  using Post = Request (*)(Comm&, std::vector<float>&, std::vector<float>&);
  const Post posts[] = {
      [](Comm& c, std::vector<float>& in, std::vector<float>& out) {
        return c.ireduce_scatter(in.data(), out.data(), out.size(), DType::f32, ReduceOp::sum);
      },
      [](Comm& c, std::vector<float>& in, std::vector<float>& out) {
        return c.iall_gather(out.data(), in.data(), out.size(), DType::f32);
      },
      [](Comm& c, std::vector<float>& in, std::vector<float>&) {
        return c.iall_reduce(in.data(), in.data(), in.size(), DType::f32, ReduceOp::sum);
      },
      [](Comm& c, std::vector<float>& in, std::vector<float>& out) {
        return c.iall_to_all(in.data(), out.data(), out.size() / 2, DType::f32);
      },
      [](Comm& c, std::vector<float>& in, std::vector<float>& out) {
        return c.iall_to_allv(in.data(), out.data(), packed_all_to_allv({10, 6}, {10, 6}), DType::f32);
      },
  };
  for (const Post post : posts)
    for (int round = 0; round < 10; ++round) {
      ThreadsOptions opt;
      opt.world_size = 2;
      const auto t0 = Clock::now();
      const RunResult r = run_threads(opt, [post](Comm& c) {
        if (c.rank() == 1) throw dtl::Error("rank 1 fails before its first collective");
        std::vector<float> in(64, 1.0f), out(32, 0.0f);
        std::vector<Request> queued;
        for (int k = 0; k < 4; ++k) queued.push_back(post(c, in, out));
        for (Request& q : queued) q.wait();
      });
      EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
      EXPECT_EQ(r.failed_rank, 1);
      EXPECT_NE(r.rank_errors[0].find("rank 1 failed"), std::string::npos) << r.rank_errors[0];
    }
}

TEST(Watchdog, ExplainsWhatEachRankWaitsOn) {
  ThreadsOptions opt;
  opt.world_size = 3;
  opt.timeout_s = 0.3;
  const RunResult r = run_threads(opt, [](Comm& c) {
    int x = 0;
    if (c.rank() == 1) c.recv(&x, 4, 0, 3);  // rank 0 never sends
  });
  ASSERT_TRUE(r.watchdog_fired);
  EXPECT_NE(r.error.find("rank 1 waits recv from rank 0 tag 3"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("rank 0 finished"), std::string::npos) << r.error;
}

// Issue 50: a lab names what a rank waits for in its own words (core/comm/wait_words.h): a
// transfer's TransferInfo::what, a library collective's Role through the installed describer;
// the backend's words follow in parentheses, without the tag the lab's words explain.
TEST(Watchdog, NamesTheWaitInTheLabsWords) {
  ThreadsOptions opt;
  opt.world_size = 3;
  opt.timeout_s = 0.3;
  const RunResult r = run_threads(opt, [](Comm& c) {
    int x = 0;
    if (c.rank() == 1) c.recv(&x, 4, 0, 4194306, TransferInfo{.what = "for the activation of micro-batch 5"});
    if (c.rank() == 2) c.send(&x, 4, 0, 7, TransferInfo{.what = "for stage 0 to take the gradient of micro-batch 5"});
  });
  ASSERT_TRUE(r.watchdog_fired);
  EXPECT_NE(r.error.find("rank 1 waits for the activation of micro-batch 5 (recv from rank 0, 4 B)"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("rank 2 waits for stage 0 to take the gradient of micro-batch 5 (send to rank 0, 4 B)"),
            std::string::npos)
      << r.error;
  EXPECT_EQ(r.error.find(" tag "), std::string::npos) << r.error;

  // A collective: the Role the caller gives it (its block) becomes the lab's words.
  const RunResult g = run_threads(opt, [](Comm& c) {
    const ScopedWaitWords words([](const Role& role) {
      return role.collective == CollectiveKind::all_gather && role.block >= 0
                 ? "for the gather of layer " + std::to_string(role.block) + "'s shards"
                 : std::string();
    });
    float x = 0, all[3] = {};
    if (c.rank() == 0) return;  // never joins
    const ScopedCollectiveRole which({.block = 3});
    c.all_gather(&x, all, 1, DType::f32);
  });
  ASSERT_TRUE(g.watchdog_fired);
  for (const char* line : {"rank 1 waits for the gather of layer 3's shards (all_gather #0, 12 B, on its comm stream)",
                           "rank 2 waits for the gather of layer 3's shards (all_gather #0"})
    EXPECT_NE(g.error.find(line), std::string::npos) << g.error;
  // Without the lab's words the backend's stand alone, as before.
  const RunResult plain = run_threads(opt, [](Comm& c) {
    float x = 0, all[3] = {};
    if (c.rank() != 0) c.all_gather(&x, all, 1, DType::f32);
  });
  EXPECT_NE(plain.error.find("rank 1 waits all_gather #0 (12 B, on its comm stream)"), std::string::npos)
      << plain.error;
}

TEST(Watchdog, CollectiveMissingAMemberIsReported) {
  ThreadsOptions opt;
  opt.world_size = 2;
  opt.timeout_s = 0.3;
  const RunResult r = run_threads(opt, [](Comm& c) {
    if (c.rank() == 0) c.barrier();  // rank 1 never joins
  });
  ASSERT_TRUE(r.watchdog_fired);
  EXPECT_NE(r.error.find("barrier"), std::string::npos) << r.error;
}

TEST(FaultInjection, FaultAtAGivenSendAndHangAtAnother) {
  ThreadsOptions opt;
  opt.world_size = 2;
  opt.faults.fault_rank = 1;
  opt.faults.fault_step = 2;
  const RunResult r = run_threads(opt, [](Comm& c) {
    for (int i = 0; i < 4; ++i) {
      int v = i;
      if (c.rank() == 1)
        c.send(&v, 4, 0, i);
      else
        c.recv(&v, 4, 1, i);
    }
  });
  EXPECT_EQ(r.failed_rank, 1);
  EXPECT_NE(r.error.find("send #2"), std::string::npos) << r.error;

  ThreadsOptions hang = opt;
  hang.faults = {};
  hang.faults.hang_rank = 0;
  hang.timeout_s = 0.3;
  const RunResult h = run_threads(hang, [](Comm& c) {
    int v = 0;
    if (c.rank() == 0)
      c.send(&v, 4, 1, 0);
    else
      c.recv(&v, 4, 0, 0);
  });
  ASSERT_TRUE(h.watchdog_fired);
  EXPECT_NE(h.error.find("--inject-hang"), std::string::npos) << h.error;
}

TEST(Runner, RejectsImpossibleWorldSizes) {
  ThreadsOptions opt;
  opt.world_size = 0;
  EXPECT_THROW(run_threads(opt, [](Comm&) {}), UsageError);
  opt.world_size = 1000000;
  EXPECT_THROW(run_threads(opt, [](Comm&) {}), UsageError);
}

TEST(Runner, SeveralWorldsRunAtOnce) {
  std::thread other([] { test::run_ranks(3, [](Comm& c) { c.barrier(); }); });
  test::run_ranks(4, [](Comm& c) {
    double v = 1;
    c.all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
    EXPECT_EQ(v, 4.0);
  });
  other.join();
}

TEST(Abort, ThrowingWithOperationsInFlightNeverTouchesFreedBuffers) {
  // Every rank posts an async all_reduce and a receive nobody will match, on buffers that
  // live on its stack, then some ranks throw: unwinding frees the buffers while the comm
  // stream is still busy. Dropped requests must settle first (ASan catches it otherwise).
  for (int P : {2, 4}) {
    for (int round = 0; round < 20; ++round) {
      ThreadsOptions opt;
      opt.world_size = P;
      const RunResult r = run_threads(opt, [round](Comm& c) {
        std::vector<float> a(1 << 14, 1.0f), b(64, 0.0f);
        Request ar = c.iall_reduce(a.data(), a.data(), a.size(), DType::f32, ReduceOp::sum);
        Request rx = c.irecv(b.data(), b.size() * 4, mod(c.rank() + 1, c.size()), 99);
        if (c.rank() % 2 == round % 2) throw std::runtime_error("fails mid-communication");
        ar.wait();
      });
      EXPECT_FALSE(r.ok());
      EXPECT_NE(r.error.find("fails mid-communication"), std::string::npos) << r.error;
    }
  }
}

// compute_nice: the rank threads run at that nice level, while the comm-stream threads
// (made by the universe's spawner, not by the ranks) keep the caller's, so a collective
// launched during compute gets the cores first. Read from /proc while both exist: exactly
// the two rank threads are niced.
TEST(Runner, RankThreadsAreNicedAndCommStreamsAreNot) {
  const int base = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  ThreadsOptions opt;
  opt.world_size = 2;
  opt.compute_nice = std::min(base + 5, 19);
  ASSERT_NE(opt.compute_nice, base);
  int niced_threads = -1, all_threads = 0;
  const RunResult r = run_threads(opt, [&](Comm& c) {
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), opt.compute_nice);
    c.barrier();  // both comm streams exist from here on (a library collective started them)
    if (c.rank() == 0) {
      niced_threads = 0;
      for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream stat(task.path() / "stat");
        std::string line;
        std::getline(stat, line);
        std::istringstream fields(line.substr(line.rfind(')') + 2));  // after "pid (name) "
        std::string f;
        for (int i = 3; i <= 19; ++i) fields >> f;  // field 19: nice
        niced_threads += std::stoi(f) == opt.compute_nice;
        ++all_threads;
      }
    }
    c.barrier();
  });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(niced_threads, 2) << "of " << all_threads << " threads, only the 2 rank threads should be niced";
  EXPECT_GE(all_threads, 5) << "ranks, their comm streams, the spawner and this thread";
}
