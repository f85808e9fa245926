// What the experts lab measures on each rank (experts_measure.cpp), shared with
// experts_lab.cpp: the routing's counts, the all-to-alls' bytes from the trace, the timings.
#pragma once

#include <cstddef>
#include <vector>

#include "labs/experts/experts_lab.h"

namespace dtl {

// Where this rank's comm events stood before a step.
struct TraceMark {
  std::size_t comm = 0;
};
TraceMark trace_mark(Comm& comm);

// The first step's routing, over every rank: drops, capacity, the busiest expert.
void measure_routing(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model, ExpertsMeasurement& m);
// Each all_to_allv's bytes in the trace since `mark` against the rows the routing sent.
void measure_all_to_all_bytes(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model, TraceMark mark,
                              ExpertsMeasurement& m);
// The routing for dtlab-viz (meta moe_routing, set by rank 0).
void publish_routing(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model);

// Per-step timings (the first step is a warm-up when there are more), then their medians.
class StepSamples {
 public:
  void add(Comm& comm, const moe::MoeModel& model, double step_seconds, int step, int steps);
  void finish(Comm& comm, const LabConfig& cfg, const ExpertsSettings& s, ExpertsMeasurement& m);

 private:
  std::vector<double> step_, a2a_, a2a_min_, expert_max_, expert_mean_, expert_wall_;  // expert_max_/mean_: CPU time
  std::vector<double> busier_rows_;  // per block: the busier direction's rows, max over ranks
  double rows_max_ = 0, rows_mean_ = 0;
};

}  // namespace dtl
