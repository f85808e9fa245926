// What the experts lab measures on each rank (experts_measure.cpp), shared with
// experts_lab.cpp: the routing's counts, the all-to-alls' bytes from the trace, the timings.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "labs/experts/experts_lab.h"

namespace dtl {

// A tensor of this rank's model with its index in the whole model's canonical list (the
// same on every EP size: what the one-rank reference's tensors are compared by).
struct IndexedTensor {
  int index = 0;
  std::vector<float> values;
};

// What the lab trains (experts_models.cpp): the MoE blocks on a regression target, or the
// tiny GPT with its MLPs replaced by the MoE. groups: routing groups per rank (1 under
// expert parallelism; the one-rank reference runs EP of them).
class ExpertsModel {
 public:
  virtual ~ExpertsModel() = default;
  virtual float train_step(int step) = 0;  // the whole batch's loss, the same on every rank
  virtual void adamw_step(const kernels::AdamWConfig& c, int t) = 0;
  virtual moe::MoeModel& moe() = 0;
  virtual std::vector<IndexedTensor> tensors(bool grads) = 0;  // this rank's, after train_step
  // A sharded checkpoint's part beside the MoE blocks' (experts_checkpoint.cpp): the GPT around
  // them (every rank holds it whole; `saves`: this rank writes it), or nothing.
  virtual StagedPieces stage_dense(bool /*saves*/) { return {}; }
  virtual std::size_t load_dense(const Manifest&) { return 0; }
};
std::unique_ptr<ExpertsModel> make_experts_model(const ExpertsSettings& s, Comm& ep, int groups);
int experts_tensor_count(const ExpertsSettings& s);  // the canonical list's length

// Sharded checkpoints (experts_checkpoint.cpp): --resume's rules, this rank's pieces (the routers
// and the GPT around the blocks: rank 0; its experts), and reading back what it holds.
ResumeRules experts_resume_rules(const ExpertsSettings& s);
StagedPieces stage_experts_checkpoint(Comm& comm, const ExpertsSettings& s, ExpertsModel& model);
std::size_t load_experts_checkpoint(Comm& comm, const ExpertsSettings& s, ExpertsModel& model, const Manifest& m);

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
// The routing of each step for dtlab-viz (meta moe_routing, set by rank 0): the first
// kMaxSteps steps, as long as their slots stay under kMaxSlots (a trace stays small).
struct RoutingLog {
  static constexpr int kMaxSteps = 32;
  static constexpr double kMaxSlots = 4e6;
  nlohmann::json steps = nlohmann::json::array();  // rank 0's
  int steps_kept = 0;                              // every rank's count
  bool wants(const ExpertsSettings& s, int step) const;
};
void publish_routing(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model, int step, RoutingLog& log);
// Too many slots for even one step: the meta says so, and why (the view shows it).
void publish_routing_omitted(Comm& comm, const ExpertsSettings& s);

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
