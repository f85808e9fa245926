// The pipeline schedule the planner runs (plan.h): its rules and the activations it keeps.
#include <string>

#include "core/error.h"
#include "core/theory/plan.h"

namespace dtl::theory {

// --schedule and --chunks: the schedule's own rules (M ≥ pp for 1F1B, M a multiple of pp and
// v ≥ 2 interleaved), and interleaving's even split: every stage the same layers, v chunks of them.
void validate_schedule(const ModelSpec& m, const ParallelConfig& p) {
  using pipeline::ScheduleKind;
  if (p.schedule != ScheduleKind::gpipe && p.schedule != ScheduleKind::one_f_one_b &&
      p.schedule != ScheduleKind::interleaved)
    throw UsageError(std::string("the planner runs gpipe, 1f1b or interleaved, not ") +
                     pipeline::schedule_name(p.schedule) + " (the zero-bubble and V schedules are the pipeline lab's)");
  if (p.chunks != 1 && p.schedule != ScheduleKind::interleaved)
    throw UsageError("--chunks " + std::to_string(p.chunks) + " splits each stage for --schedule interleaved only");
  if (p.pp == 1 && p.schedule != ScheduleKind::one_f_one_b)
    throw UsageError(std::string("--schedule ") + pipeline::schedule_name(p.schedule) +
                     " orders a pipeline's stages; with --pp 1 there is none: add --pp N or drop --schedule");
  if (p.pp > 1) pipeline::validate(p.schedule, {p.pp, p.micro_batches, p.chunks});
  if (p.schedule == ScheduleKind::interleaved && m.layers > 0 && m.layers % (p.pp * p.chunks) != 0)
    throw UsageError("--schedule interleaved needs the same layers on every stage, in " + std::to_string(p.chunks) +
                     " chunks: " + std::to_string(m.layers) +
                     " layers are not a multiple of pp · chunks = " + std::to_string(p.pp * p.chunks));
}

double activations_in_flight(double layer_bytes, int stage_layers, int micro_batches, int pp) {
  return layer_bytes * stage_layers * std::min(micro_batches, pp);
}

double activations_in_flight(double layer_bytes, int stage_layers, int micro_batches, int pp,
                             pipeline::ScheduleKind schedule, int chunks) {
  if (schedule == pipeline::ScheduleKind::one_f_one_b)
    return activations_in_flight(layer_bytes, stage_layers, micro_batches, pp);
  const pipeline::Schedule s = pipeline::make_schedule(schedule, {pp, micro_batches, chunks});
  return layer_bytes * (double(stage_layers) / chunks) * pipeline::max_in_flight(s, 0);
}

}  // namespace dtl::theory
