// The pipeline exercise API: the two pieces of a pipeline-parallel runtime that the
// pipeline lab (labs/pipeline/) calls. Built from solutions/pipeline.cpp or your
// exercises/pipeline.cpp. Schedules are data (core/theory/schedule.h): each stage's
// ordered list of F (forward), B (backward) and W (weight-gradient) actions.
#pragma once

#include <functional>
#include <vector>

#include "core/comm/comm.h"
#include "core/theory/schedule.h"

namespace dtl::ex {

// Exercise 18: the 1F1B schedule of one stage (Narayanan et al. 2021; seeds 001, 002).
// In: P = `stages`, M = `micro_batches`, this `stage`. Out: the stage's actions in the order
// it runs them — each micro-batch's F once and B once (chunk 0), the F's in micro-batch order
// 0, 1, .., M-1 and the B's too. The rule that makes it 1F1B: the stage never holds more than
// P - stage micro-batches in flight (forward done, backward not yet), and it runs a backward
// whenever one can run by then, so that in its steady state it alternates one F and one B.
std::vector<pipeline::Action> one_f_one_b(int stages, int micro_batches, int stage);

// The W split of the zero-bubble schedules (Qi et al. 2023 "Zero Bubble Pipeline Parallelism",
// ZB-H1). In: one stage's actions (F and B, any schedule's: 1F1B's, interleaved's) and a `lag`
// (the lab passes the stage's index). Out: the same list with each backward split in two — the B
// stays where it is and computes only the input gradient the stage before waits for, and a W of
// the same micro-batch and chunk (the weight gradients, which nobody waits for) comes later:
// after each B, as long as more than `lag` W's are waiting, the oldest waiting W runs next; the
// W's still waiting at the end follow the last action, oldest first. F's and B's keep their order.
// Deferring W keeps the activations it needs longer (stage s holds s more micro-batches: P on
// every stage of ZB-H1) and lets the W's fill the cool-down's bubble.
std::vector<pipeline::Action> split_backward(const std::vector<pipeline::Action>& actions, int lag);

// What the lab does for the stage loop below, for micro-batch m of this stage's chunk c.
// The receives and sends are posted (non-blocking) and return their Request; the lab keeps
// every buffer alive until the step ends.
struct StageOps {
  std::function<bool(int c)> has_previous;  // false on the model's first virtual stage
  std::function<bool(int c)> has_next;      // false on the last one (it computes the loss)
  std::function<Request(int m, int c)> recv_activation, send_activation, recv_gradient, send_gradient;
  std::function<void(int m, int c)> forward, backward, weight;
};

// Exercise 19: run one stage's actions in order. Before F(m, c) the activation of m must
// have arrived from the previous virtual stage (if any); after it, send the output on (if
// there is a next one). Before B(m, c) the gradient must have arrived from the next
// virtual stage (if any); after it, send dX back (if there is a previous one). W(m, c)
// only computes. Never wait for a send inside the loop: put its Request in `sends` (the
// lab waits for them after the step). Two neighbours that both block on a send to each
// other — the next stage sending a gradient back while this one sends an activation on —
// would wait forever. An F marked with_next and the B after it are an overlapped pair
// (DualPipe's F&B): wait for both their inputs, then run the F and the B.
void run_stage(const std::vector<pipeline::Action>& actions, const StageOps& ops, std::vector<Request>& sends);

}  // namespace dtl::ex
