// The step gate releases one transfer at a time, in the same order on every run.
#include <gtest/gtest.h>

#include <thread>

#include "core/comm/threads_backend.h"
#include "core/trace/chunk_state.h"
#include "core/trace/step_gate.h"
#include "core/trace/trace.h"
#include "exercises/collectives.h"

using namespace dtl;

namespace {
struct Stepped {
  std::vector<std::string> order;        // "src->dst:chunk" per transfer
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
  while (gate.wait_quiet() == StepGate::State::transfer_waiting) {
    s.done_per_step.push_back(transfers_in_order(trace.snapshot()).size());
    gate.release_one();
  }
  runner.join();
  EXPECT_TRUE(result.ok()) << result.error;
  ChunkState state(P, P);
  for (const Event& e : transfers_in_order(trace.snapshot())) {
    state.apply(e);
    s.order.push_back(std::to_string(e.peer) + "->" + std::to_string(e.rank) + ":" + std::to_string(e.chunk));
  }
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
