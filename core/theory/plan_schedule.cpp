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
namespace {

// --first-stage-layers / --last-stage-layers: a pipeline to shape, every stage left with at
// least one layer, and one chunk per stage (the looped and V schedules split stages evenly).
void validate_uneven_stages(const ModelSpec& m, const ParallelConfig& p) {
  if (p.first_stage_layers < 0 || p.last_stage_layers < 0)
    throw UsageError("--first-stage-layers and --last-stage-layers count layers: give 1 or more (0: the even split)");
  if (p.first_stage_layers == 0 && p.last_stage_layers == 0) return;
  if (p.pp < 2)
    throw UsageError(
        "--first-stage-layers/--last-stage-layers shape a pipeline's end stages; with --pp 1 there is "
        "one stage: add --pp N or drop them");
  if (p.chunks > 1)
    throw UsageError(std::string("--schedule ") + pipeline::schedule_name(p.schedule) +
                     " splits every stage into chunks of the same layers: uneven end stages are modelled with "
                     "one chunk per stage (gpipe, 1f1b, zb-h1, zb-h2)");
  if (m.layers <= 0) return;
  const int ends = p.first_stage_layers + p.last_stage_layers;
  const int others = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
  if (m.layers - ends < others || (others == 0 && m.layers != ends))
    throw UsageError("the end stages' " + std::to_string(ends) + " layers leave " + std::to_string(m.layers - ends) +
                     " of the model's " + std::to_string(m.layers) + " for the other " + std::to_string(others) +
                     " stages" + (others == 0 ? ", which must be none" : ", at least one each") +
                     ": lower --first-stage-layers/--last-stage-layers");
}

}  // namespace

void validate_schedule(const ModelSpec& m, const ParallelConfig& p) {
  using pipeline::ScheduleKind;
  validate_uneven_stages(m, p);
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

std::vector<int> stage_layer_counts(int layers, const ParallelConfig& p) {
  const int stages = std::max(p.pp, 1);
  std::vector<int> out(std::size_t(stages), 0);
  const bool first = p.first_stage_layers > 0 && stages > 1, last = p.last_stage_layers > 0 && stages > 1;
  if (first) out.front() = p.first_stage_layers;
  if (last) out.back() = p.last_stage_layers;
  const int even_from = first ? 1 : 0, even_to = stages - (last ? 1 : 0);  // [from, to): the even stages
  const int n = even_to - even_from;
  const int rest = layers - (first ? p.first_stage_layers : 0) - (last ? p.last_stage_layers : 0);
  for (int i = 0; i < n; ++i) out[std::size_t(even_from) + std::size_t(i)] = rest / n + (i < rest % n ? 1 : 0);
  return out;
}

int most_stage_layers(int layers, const ParallelConfig& p) {
  const std::vector<int> counts = stage_layer_counts(layers, p);
  return *std::max_element(counts.begin(), counts.end());
}

double layers_in_flight(int layers, const ParallelConfig& p) {
  const std::vector<int> counts = stage_layer_counts(layers, p);
  const bool one_f_one_b = p.schedule == pipeline::ScheduleKind::one_f_one_b || p.pp < 2;
  pipeline::Schedule schedule;
  if (!one_f_one_b)
    schedule = pipeline::make_schedule(p.schedule, pipeline::config_for(p.schedule, p.pp, p.micro_batches, p.chunks));
  double most = 0;
  for (int s = 0; s < int(counts.size()); ++s) {
    const int in_flight = one_f_one_b ? std::min(p.micro_batches, p.pp - s) : pipeline::max_in_flight(schedule, s);
    most = std::max(most, double(counts[std::size_t(s)]) / p.chunks * in_flight);
  }
  return most;
}

}  // namespace dtl::theory
