// The pipeline schedule the planner runs (plan.h): its rules and the activations it keeps.
#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/theory/plan.h"

namespace dtl::theory {

// --schedule and --chunks: the schedule's own rules (pipeline::validate: M ≥ pp for 1F1B, M a
// multiple of pp and v ≥ 2 interleaved, M ≥ 2·pp for DualPipeV, ...) and the planner's: the same
// layers on every stage where a stage holds several chunks (interleaving's v, the V schedules'
// two), and a zero-bubble W split only where the gradients are reduced once per step.
void validate_schedule(const ModelSpec& m, const ParallelConfig& p) {
  using pipeline::ScheduleKind;
  if (p.schedule == ScheduleKind::csv)
    throw UsageError(
        "a csv schedule is the pipeline lab's (dtlab run pipeline --schedule-csv FILE); the planner "
        "runs the built-in ones");
  const bool looped = p.schedule == ScheduleKind::interleaved || p.schedule == ScheduleKind::interleaved_zb;
  const bool vee = p.schedule == ScheduleKind::zb_v || p.schedule == ScheduleKind::dualpipe_v;
  if (p.chunks != 1 && !looped && !vee)
    throw UsageError("--chunks " + std::to_string(p.chunks) +
                     " splits each stage for --schedule interleaved or interleaved-zb only");
  if (p.pp == 1 && p.schedule != ScheduleKind::one_f_one_b)
    throw UsageError(std::string("--schedule ") + pipeline::schedule_name(p.schedule) +
                     " orders a pipeline's stages; with --pp 1 there is none: add --pp N or drop --schedule");
  if (p.pp == 1) return;
  const pipeline::ScheduleConfig c = pipeline::config_for(p.schedule, p.pp, p.micro_batches, p.chunks);
  pipeline::validate(p.schedule, c);
  if (c.chunks > 1 && m.layers > 0 && m.layers % (p.pp * c.chunks) != 0)
    throw UsageError(std::string("--schedule ") + pipeline::schedule_name(p.schedule) +
                     " needs the same layers on every stage, in " + std::to_string(c.chunks) +
                     " chunks: " + std::to_string(m.layers) +
                     " layers are not a multiple of pp · chunks = " + std::to_string(p.pp * c.chunks));
  if (p.zero >= 2 && pipeline::make_schedule(p.schedule, c).has_weight_actions())
    throw UsageError(std::string("--schedule ") + pipeline::schedule_name(p.schedule) +
                     " defers weight gradients (W) past their backward; the planner models that with the "
                     "gradients reduced once per step (ZeRO-0/1): use --zero 0 or 1, or a schedule without W "
                     "(gpipe, 1f1b, interleaved)");
}

int pp_sends_per_micro_batch(const ParallelConfig& p) {
  pipeline::Schedule placement;  // (only the configuration: where each virtual stage sits)
  placement.config = pipeline::config_for(p.schedule, p.pp, p.micro_batches, p.chunks);
  const int V = placement.virtual_stages();
  int most = 0;
  for (int s = 0; s < p.pp; ++s) {
    int sends = 0;
    for (int c = 0; c < placement.config.chunks; ++c) {
      const int vs = placement.virtual_stage(s, c);
      sends += vs + 1 < V && placement.stage_of(vs + 1) != s ? 1 : 0;  // F: the activation onward
      sends += vs > 0 && placement.stage_of(vs - 1) != s ? 1 : 0;      // B: the gradient back
    }
    most = std::max(most, sends);
  }
  return most;
}

double schedule_bubble(const ParallelConfig& p, const pipeline::ActionTimes& layer, const char** formula, bool* tiled) {
  const pipeline::PublishedBubble b =
      pipeline::published_bubble(p.schedule, pipeline::config_for(p.schedule, p.pp, p.micro_batches, p.chunks), layer);
  const bool one_chunk =
      p.schedule == pipeline::ScheduleKind::gpipe || p.schedule == pipeline::ScheduleKind::one_f_one_b;
  if (formula)  // (the curriculum's shape-free words where the times cancel)
    *formula = one_chunk                                           ? "(p−1)/(M+p−1)"
               : p.schedule == pipeline::ScheduleKind::interleaved ? "(p−1)/(v·M+p−1)"
                                                                   : b.formula;
  if (tiled) *tiled = b.tiled;
  return b.idle_share;
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
