// The step gate releases one transfer at a time, in the same order on every run.
#include "core/trace/step_gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "core/comm/threads_backend.h"
#include "core/trace/chunk_state.h"
#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "exercises/collectives.h"

using namespace dtl;

namespace {
struct Stepped {
  std::vector<std::string> order;          // "src->dst:chunk" per transfer, as released
  std::vector<std::size_t> done_per_step;  // transfers completed at each quiet point
  bool all_complete = false;
};

Stepped step_ring(int P) {
  Trace trace(P);
  StepGate gate(P);
  ThreadsOptions opt;
  opt.world_size = P;
  opt.trace = &trace;
  opt.gate = &gate;
  RunResult result;
  std::thread runner([&] {
    result = run_threads(opt, [](Comm& c) {
      std::vector<float> v(c.size() * 4, float(c.rank()));
      ex::ring_all_reduce(c, {v.data(), v.size(), DType::f32}, ReduceOp::sum);
    });
  });
  Stepped s;
  LandingOrder landed;  // each release adds one transfer, in release order
  while (gate.wait_quiet() == StepGate::State::transfer_waiting) {
    s.done_per_step.push_back(landed.update(trace.snapshot()).size());
    gate.release_one();
  }
  runner.join();
  for (const Event& e : landed.update(trace.snapshot()))
    s.order.push_back(std::to_string(e.peer) + "->" + std::to_string(e.rank) + ":" + std::to_string(e.chunk));
  EXPECT_TRUE(result.ok()) << result.error;
  ChunkState state(P, P);
  for (const Event& e : transfers_in_order(trace.snapshot())) state.apply(e);
  s.all_complete = true;
  for (int r = 0; r < P; ++r)
    for (int c = 0; c < P; ++c) s.all_complete = s.all_complete && state.count(r, c) == P;
  return s;
}
}  // namespace

TEST(StepGate, OneTransferPerStepInTheSameOrderEveryRun) {
  for (int P : {2, 3, 4}) {
    const Stepped a = step_ring(P), b = step_ring(P);
    const std::size_t transfers = std::size_t(2 * (P - 1) * P);
    ASSERT_EQ(a.order.size(), transfers);
    EXPECT_EQ(a.order, b.order) << "P=" << P << ": the order changed between runs";
    ASSERT_EQ(a.done_per_step.size(), transfers);
    for (std::size_t k = 0; k < transfers; ++k) EXPECT_EQ(a.done_per_step[k], k) << "step " << k;
    EXPECT_TRUE(a.all_complete);
    EXPECT_EQ(a.order.front(), "0->1:" + std::to_string(P - 1));  // rank 0 first sends chunk P-1
  }
}

// Stepping by collectives (DDP): every rank computes up to its next collective's launch and
// waits there; one release launches one collective on every member, and the ranks compute
// on while it runs (the launch is async), up to the next one.
TEST(StepGate, StepsLibraryCollectivesOneAtATime) {
  constexpr int P = 4, kCollectives = 3;
  Trace trace(P);
  StepGate gate(P, StepUnit::collectives);
  ThreadsOptions opt;
  opt.world_size = P;
  opt.trace = &trace;
  opt.gate = &gate;
  const std::uint16_t work = trace.label("work");
  RunResult result;
  std::vector<std::vector<float>> sums(P, std::vector<float>(kCollectives));
  std::thread runner([&] {
    result = run_threads(opt, [&](Comm& c) {
      std::vector<Request> pending;
      std::vector<float>& v = sums[std::size_t(c.rank())];
      for (int k = 0; k < kCollectives; ++k) {
        {
          ScopedSpan span(c.trace(), c.rank(), EventKind::compute, work, k);
          v[std::size_t(k)] = float(c.rank() + k);
        }
        pending.push_back(c.iall_reduce(&v[std::size_t(k)], &v[std::size_t(k)], 1, DType::f32, ReduceOp::sum));
      }
      for (Request& r : pending) r.wait();
    });
  });
  int releases = 0;
  while (gate.wait_quiet() == StepGate::State::transfer_waiting) {
    // Before release k every rank has computed k+1 times: it waits at launch k.
    std::vector<int> computed(P, 0);
    for (const Event& e : trace.snapshot())
      if (e.kind == EventKind::compute) computed[std::size_t(e.rank)]++;
    for (int r = 0; r < P; ++r)
      EXPECT_EQ(computed[std::size_t(r)], releases + 1) << "rank " << r << ", release " << releases;
    gate.release_one();
    ++releases;
  }
  runner.join();
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(releases, kCollectives);
  for (int r = 0; r < P; ++r)
    for (int k = 0; k < kCollectives; ++k)
      EXPECT_EQ(sums[std::size_t(r)][std::size_t(k)], float(P * (P - 1) / 2 + P * k));
}

// The learner's pauses are nobody's work: a stepped ring whose controller thinks 15 ms
// before every release measures (RunClock, and the trace's clock) about what a free ring
// does — not the 15 ms × transfers the run sat waiting. Before RunClock, every stepped
// figure counted them (a stepped pipeline read a 76 % bubble).
TEST(StepGate, ALearnersPausesAreLeftOutOfTheRunsClocks) {
  constexpr int P = 3;
  constexpr auto kThink = std::chrono::milliseconds(15);
  Trace trace(P);
  StepGate gate(P);
  ThreadsOptions opt;
  opt.world_size = P;
  opt.trace = &trace;
  opt.gate = &gate;
  std::vector<double> run_s(P), steady_s(P);
  RunResult result;
  std::thread runner([&] {
    result = run_threads(opt, [&](Comm& c) {
      const auto run0 = RunClock::now();
      const auto steady0 = std::chrono::steady_clock::now();
      std::vector<float> v(std::size_t(c.size()) * 4, float(c.rank()));
      ex::ring_all_reduce(c, {v.data(), v.size(), DType::f32}, ReduceOp::sum);
      run_s[std::size_t(c.rank())] = std::chrono::duration<double>(RunClock::now() - run0).count();
      steady_s[std::size_t(c.rank())] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - steady0).count();
    });
  });
  int releases = 0;
  while (gate.wait_quiet() == StepGate::State::transfer_waiting) {
    std::this_thread::sleep_for(kThink);
    gate.release_one();
    ++releases;
  }
  runner.join();
  ASSERT_TRUE(result.ok()) << result.error;
  const double thought = std::chrono::duration<double>(kThink).count() * releases;
  EXPECT_NEAR(std::chrono::duration<double>(gate.paused()).count(), thought, 0.5 * thought);
  for (int r = 0; r < P; ++r) {
    EXPECT_GE(steady_s[std::size_t(r)], 0.9 * thought) << "rank " << r << ": the wall clock did wait";
    EXPECT_LT(run_s[std::size_t(r)], 0.25 * thought)
        << "rank " << r << ": " << run_s[std::size_t(r)] << " s measured of " << steady_s[std::size_t(r)] << " s wall, "
        << thought << " s of it thinking";
  }
  // The trace: the run's events span about what the ranks measured, not the thinking time.
  std::int64_t first = INT64_MAX, last = 0;
  for (const Event& e : trace.snapshot()) first = std::min(first, e.begin_ns), last = std::max(last, e.end_ns);
  EXPECT_LT(double(last - first) * 1e-9, 0.25 * thought) << "the trace spans " << double(last - first) * 1e-9 << " s";
}

// While a released collective runs on the comm streams the world is not quiet, even when
// every rank already sleeps at the next launch: its time is the run's, never a pause.
TEST(StepGate, CommWorkInFlightKeepsTheWorldBusy) {
  StepGate gate(1, StepUnit::collectives);
  gate.block(0);
  gate.work_begin(0);
  bool released = false;
  gate.submit(1, [&] { released = true; });
  EXPECT_EQ(gate.poll(), StepGate::Poll::running);  // the rank sleeps, but the stream works
  EXPECT_FALSE(gate.controller_waiting());
  EXPECT_EQ(gate.paused().count(), 0);
  gate.block(0, /*comm_stream=*/true);  // the stream sleeps on the rest of its group: quiet
  EXPECT_EQ(gate.poll(), StepGate::Poll::transfer_waiting);
  gate.unblock(0, true);
  EXPECT_EQ(gate.poll(), StepGate::Poll::running);
  gate.work_end(0);
  EXPECT_EQ(gate.poll(), StepGate::Poll::transfer_waiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  gate.release_one();
  EXPECT_TRUE(released);
  EXPECT_GE(gate.paused(), std::chrono::milliseconds(4));
}

// A stepped run's transfers carry run time: one released later may carry an earlier end
// than one already shown (the two did not depend on each other). The controller's order
// keeps what it showed in place and adds the new one at the end, once.
TEST(LandingOrder, KeepsWhatWasShownAndAddsNewTransfersAtTheEnd) {
  auto recv = [](std::uint64_t flow, std::int64_t end) {
    Event e;
    e.kind = EventKind::recv;
    e.flow_id = flow;
    e.begin_ns = end - 10;
    e.end_ns = end;
    return e;
  };
  LandingOrder order;
  std::vector<Event> events = {recv(1, 500)};
  ASSERT_EQ(order.update(events).size(), 1u);
  events.push_back(recv(2, 300));  // released second, earlier in run time
  events.push_back(recv(3, 700));
  const std::vector<Event>& seen = order.update(events);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].flow_id, 1u);
  EXPECT_EQ(seen[1].flow_id, 2u);  // the new ones by end time, after what was shown
  EXPECT_EQ(seen[2].flow_id, 3u);
  EXPECT_EQ(order.update(events).size(), 3u) << "nothing new: nothing added";
  EXPECT_EQ(transfers_in_order(events)[0].flow_id, 2u) << "a replay orders by end time";
}
