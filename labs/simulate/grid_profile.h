// What a grid-lab run's events say about where its steps went, for `dtlab simulate
// --calibrate` (labs/cli/simulate_calibrate.cpp): the compute of each block call, the
// optimizer and host work, and rank 0's step split into compute, tp, dp and the rest.
//
// The grid lab (labs/grid) opens every step with a world barrier; the steps read here are
// those between the second barrier and the last one (the first step warms up, the last has
// no barrier after it). Inside a step, on each rank:
//   block call   a "fwd block N" / "bwd block N" compute span, minus the tp collectives
//                that run inside it (Megatron's f and g on the comm stream); a stage's figure
//                is, per call, the slowest of its tp group (the g all-reduce waits for it),
//                their mean over a step, and the slowest dp replica's (the gradients'
//                all-reduce waits for it)
//   host         rank 0's time from the step's start to its first block (the batch) plus
//                the stage's slowest gap after the first dp collective of more than 8 bytes
//                (the gradients' all-reduce or ZeRO-1's reduce-scatter) before the next
//                collective: AdamW
// Each figure is the median over the steps read, as the lab's step time is.
#pragma once

#include <string>
#include <vector>

#include "core/trace/event.h"
#include "labs/simulate/workload.h"

namespace dtl::sim {

struct StepPhases {
  double compute = 0, tp = 0, dp = 0, rest = 0;  // seconds per step; rest: pipeline waits, pp, host work
};

struct GridProfile {
  std::vector<double> block_forward_s, block_backward_s;  // per stage: seconds per block call
  std::vector<double> host_s;                             // per stage: seconds per step
  StepPhases rank0;                                       // medians over the steps read
  int steps_read = 0;
};

// Throws dtl::Error when the events hold fewer than 3 step barriers or no block spans.
GridProfile profile_grid_events(const std::vector<Event>& events, const std::vector<Role>& roles,
                                const GridShapeSpec& g);

}  // namespace dtl::sim
