// Reference solutions of the pipeline exercises (exercises/pipeline.h).
#include "exercises/pipeline.h"

#include <algorithm>
#include <deque>

namespace dtl::ex {

std::vector<pipeline::Action> one_f_one_b(int stages, int micro_batches, int stage) {
  std::vector<pipeline::Action> actions;
  const int warmup = std::min(stages - stage - 1, micro_batches);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) actions.push_back({Pass::forward, next_forward, 0});
  // Steady state: one forward, then the backward of the oldest micro-batch in flight.
  while (next_forward < micro_batches) {
    actions.push_back({Pass::forward, next_forward++, 0});
    actions.push_back({Pass::backward, next_backward++, 0});
  }
  while (next_backward < micro_batches) actions.push_back({Pass::backward, next_backward++, 0});  // cool-down
  return actions;
}

std::vector<pipeline::Action> split_backward(const std::vector<pipeline::Action>& actions, int lag) {
  std::vector<pipeline::Action> split;
  std::deque<pipeline::Action> waiting;  // the W's of B's already placed, oldest first
  for (const pipeline::Action& a : actions) {
    split.push_back(a);
    if (a.op != Pass::backward) continue;
    waiting.push_back({Pass::weight, a.micro_batch, a.chunk});
    // Only `lag` W's may wait: the oldest runs now (its activations are freed after it).
    while (int(waiting.size()) > lag) {
      split.push_back(waiting.front());
      waiting.pop_front();
    }
  }
  split.insert(split.end(), waiting.begin(), waiting.end());  // the rest fill the cool-down
  return split;
}

int vee_stage(int stages, int stage, int chunk) {
  // Down the stages with chunk 0, back up with chunk 1: stage 0 holds the first and the last.
  return chunk == 0 ? stage : 2 * stages - 1 - stage;
}

std::vector<pipeline::Action> dualpipe_pairs(int stages, int micro_batches, int stage) {
  const int P = stages, M = micro_batches, s = stage;
  int next_f[2] = {2 * P - s - 1, P}, next_b[2] = {0, P - s - 1};  // after the warm-up
  std::vector<pipeline::Action> out;
  const auto forward = [&](int c, bool paired) { out.push_back({Pass::forward, next_f[c]++, c, paired}); };
  const auto backward = [&](int c) { out.push_back({Pass::backward, next_b[c]++, c, false}); };
  for (int i = 0; i < M - 2 * P + s + 1; ++i) {
    // The last stage's first B1 waits for its gradient to come back up the V; its F0 need not.
    forward(0, !(i == 0 && s == P - 1));
    backward(1);
    forward(1, true);
    backward(0);
  }
  for (int i = 0; i < P - s - 1; ++i) {
    backward(1);
    forward(1, true);
    backward(0);
  }
  return out;
}

namespace {

// Posts the receive `a` needs (none for W, nor at the model's ends).
std::vector<Request> post_input(const pipeline::Action& a, const StageOps& ops) {
  if (a.op == Pass::forward && ops.has_previous(a.chunk)) return {ops.recv_activation(a.micro_batch, a.chunk)};
  if (a.op == Pass::backward && ops.has_next(a.chunk)) return {ops.recv_gradient(a.micro_batch, a.chunk)};
  return {};
}

// Computes `a` and posts what it sends on (never waited here).
void compute_and_send(const pipeline::Action& a, const StageOps& ops, std::vector<Request>& sends) {
  const int m = a.micro_batch, c = a.chunk;
  if (a.op == Pass::forward) {
    ops.forward(m, c);
    if (ops.has_next(c)) sends.push_back(ops.send_activation(m, c));
  } else if (a.op == Pass::backward) {
    ops.backward(m, c);
    if (ops.has_previous(c)) sends.push_back(ops.send_gradient(m, c));
  } else {
    ops.weight(m, c);
  }
}

}  // namespace

void run_stage(const std::vector<pipeline::Action>& actions, const StageOps& ops, std::vector<Request>& sends) {
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const pipeline::Action& a = actions[i];
    std::vector<Request> inputs = post_input(a, ops);
    const bool pair = a.with_next && i + 1 < actions.size();  // an overlapped F&B: both inputs first
    if (pair)
      for (Request& r : post_input(actions[i + 1], ops)) inputs.push_back(std::move(r));
    for (Request& r : inputs) r.wait();
    compute_and_send(a, ops, sends);
    if (pair) compute_and_send(actions[++i], ops, sends);
  }
}

}  // namespace dtl::ex
