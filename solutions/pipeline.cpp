// Reference solutions of the pipeline exercises (exercises/pipeline.h).
#include "exercises/pipeline.h"

#include <algorithm>

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

void run_stage(const std::vector<pipeline::Action>& actions, const StageOps& ops, std::vector<Request>& sends) {
  for (const pipeline::Action& a : actions) {
    const int m = a.micro_batch, c = a.chunk;
    if (a.op == Pass::forward) {
      if (ops.has_previous(c)) ops.recv_activation(m, c).wait();  // its input
      ops.forward(m, c);
      if (ops.has_next(c)) sends.push_back(ops.send_activation(m, c));  // posted, never waited here
    } else if (a.op == Pass::backward) {
      if (ops.has_next(c)) ops.recv_gradient(m, c).wait();  // dL/d(output) from the next stage
      ops.backward(m, c);
      if (ops.has_previous(c)) sends.push_back(ops.send_gradient(m, c));
    } else {
      ops.weight(m, c);
    }
  }
}

}  // namespace dtl::ex
