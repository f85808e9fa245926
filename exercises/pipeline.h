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

// The V placement of ZB-V and DualPipeV (Qi et al. 2023 §4 "ZB-V"; DeepSeek-V3's DualPipe cut in
// half). The model is cut into 2P virtual stages (2P consecutive runs of layers, 0 the first) and
// each of the P stages (ranks) holds two of them, its chunks 0 and 1. In: P = `stages`, a `stage`
// and a `chunk` (0 or 1). Out: the virtual stage that chunk holds. Chunk 0 goes down the stages in
// order; the model then folds back, so that chunk 1 comes up them from the last stage to stage 0.
// The lab lays the model out from your answer and checks where the loss and the activations end up.
int vee_stage(int stages, int stage, int chunk);

// DualPipeV's overlapped pairs (DeepSeek-V3 §3.2.1 DualPipe; Sea AI Lab's DualPipeV, torch's
// ScheduleDualPipeV): one micro-batch's forward on one chunk run beside another's backward on the
// other chunk, so that each one's communication hides behind the other's compute. In: P = `stages`,
// M = `micro_batches` (M ≥ 2P), this `stage` s, on the V placement above. Before the part you write,
// the stage has run the forwards of chunk 0 for micro-batches 0 .. 2P − s − 2, of chunk 1 for
// 0 .. P − 1, and the backwards of chunk 1 for 0 .. P − s − 2. Out: the stage's next actions —
//   M − 2P + s + 1 times: the next F of chunk 0 paired with the next B of chunk 1, then the next F
//                         of chunk 1 paired with the next B of chunk 0;
//   then P − s − 1 times: the next B of chunk 1 alone, then the next F of chunk 1 paired with the
//                         next B of chunk 0.
// "Next" counts on from what already ran, per chunk and pass. A pair is its F marked with_next
// followed by its B (full backwards: no W here). One pair is not overlapped: the last stage's
// first F of chunk 0 and the B of chunk 1 after it run apart, in that order. The lab runs the
// schedule built from your pairs and checks its pairs, its memory and its weights.
std::vector<pipeline::Action> dualpipe_pairs(int stages, int micro_batches, int stage);

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
