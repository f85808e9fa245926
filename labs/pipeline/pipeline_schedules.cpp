// The schedules the pipeline lab runs (pipeline_lab.h): what --schedule names, and each one's
// per-stage lists — core/theory's, or built from the learner's exercises (one_f_one_b,
// split_backward for the zero-bubble splits, vee_stage for the V's placement, dualpipe_pairs
// for DualPipeV's overlapped pairs).
#include <string>

#include "core/error.h"
#include "exercises/pipeline.h"
#include "labs/pipeline/pipeline_lab.h"

namespace dtl {

using pipeline::ScheduleKind;

std::vector<ScheduleKind> kinds_of(const PipelineSettings& s) {
  if (s.csv) return {ScheduleKind::csv};
  switch (s.schedule) {
    case ScheduleChoice::gpipe: return {ScheduleKind::gpipe};
    case ScheduleChoice::one_f_one_b: return {ScheduleKind::one_f_one_b};
    case ScheduleChoice::interleaved: return {ScheduleKind::interleaved};
    case ScheduleChoice::zb_h1: return {ScheduleKind::zb_h1};
    case ScheduleChoice::zb_h2: return {ScheduleKind::zb_h2};
    case ScheduleChoice::zb_v: return {ScheduleKind::zb_v};
    case ScheduleChoice::interleaved_zb: return {ScheduleKind::interleaved_zb};
    case ScheduleChoice::dualpipe_v: return {ScheduleKind::dualpipe_v};
    case ScheduleChoice::all: break;
  }
  return pipeline::builtin_schedules();
}

namespace {

// Checks `sched`; a rule it breaks is the named exercise's fault: the run fails (exit 1), naming it.
void check_from_exercise(const pipeline::Schedule& sched, const char* exercise, const std::string& what) {
  try {
    pipeline::check_schedule(sched);
  } catch (const UsageError& e) {
    throw Error(std::string(exercise) + " (your exercise) gave " + what + " the " +
                pipeline::schedule_name(sched.kind) + " schedule cannot run: " + e.what());
  }
}

// ZB-H1 and interleaved-zb: 1F1B's and interleaving's lists (core/theory's) with each stage's
// backward split by the learner's split_backward (lag = the stage), checked like any schedule.
pipeline::Schedule split_schedule(ScheduleKind k, const PipelineSettings& s, int P) {
  const ScheduleKind base = k == ScheduleKind::zb_h1 ? ScheduleKind::one_f_one_b : ScheduleKind::interleaved;
  pipeline::Schedule sched = pipeline::make_schedule(base, pipeline::config_for(base, P, s.micro_batches, s.chunks));
  sched.kind = k;
  for (int stage = 0; stage < P; ++stage)
    sched.stages[std::size_t(stage)] = ex::split_backward(sched.stages[std::size_t(stage)], stage);  // exercise
  check_from_exercise(sched, "split_backward", "W's with which");
  return sched;
}

// The V schedules' placement from the learner's vee_stage: each (stage, chunk)'s virtual stage,
// checked to cover the model once before anything is laid out on it.
std::vector<int> learner_vee(int P) {
  std::vector<int> placed;
  for (int stage = 0; stage < P; ++stage)
    for (int chunk = 0; chunk < 2; ++chunk) placed.push_back(ex::vee_stage(P, stage, chunk));  // exercise
  return placed;
}

// DualPipeV: core/theory's warm-up and cool-down around the learner's overlapped pairs.
pipeline::Schedule dualpipe_schedule(const PipelineSettings& s, int P) {
  const ScheduleKind k = ScheduleKind::dualpipe_v;
  pipeline::Schedule sched{k, pipeline::config_for(k, P, s.micro_batches, s.chunks), {}, {}};
  pipeline::validate(k, sched.config);
  const int M = s.micro_batches;
  for (int stage = 0; stage < P; ++stage) {
    std::vector<pipeline::Action> list = pipeline::dualpipe_v_part(P, M, stage, pipeline::DualPipePart::warm_up);
    const std::vector<pipeline::Action> pairs = ex::dualpipe_pairs(P, M, stage);  // exercise
    list.insert(list.end(), pairs.begin(), pairs.end());
    const std::vector<pipeline::Action> rest =
        pipeline::dualpipe_v_part(P, M, stage, pipeline::DualPipePart::cool_down);
    list.insert(list.end(), rest.begin(), rest.end());
    sched.stages.push_back(std::move(list));
  }
  check_from_exercise(sched, "dualpipe_pairs", "pairs with which");
  return sched;
}

// ZB-V and DualPipeV on the learner's V: the lists first checked on the V of core/theory (a
// fault there is the pairs'), then on the learner's placement.
pipeline::Schedule vee_schedule(ScheduleKind k, const PipelineSettings& s, int P) {
  pipeline::Schedule sched = k == ScheduleKind::dualpipe_v
                                 ? dualpipe_schedule(s, P)
                                 : pipeline::make_schedule(k, pipeline::config_for(k, P, s.micro_batches, s.chunks));
  sched.placed = learner_vee(P);
  check_from_exercise(sched, "vee_stage", "a placement with which");
  return sched;
}

}  // namespace

pipeline::Schedule schedule_of(ScheduleKind k, const PipelineSettings& s, int P) {
  if (k == ScheduleKind::csv) return s.csv->schedule;  // read and checked by the settings
  if (k == ScheduleKind::zb_h1 || k == ScheduleKind::interleaved_zb) return split_schedule(k, s, P);
  if (k == ScheduleKind::zb_v || k == ScheduleKind::dualpipe_v) return vee_schedule(k, s, P);
  if (k != ScheduleKind::one_f_one_b) {
    pipeline::Schedule sched = pipeline::make_schedule(k, pipeline::config_for(k, P, s.micro_batches, s.chunks));
    pipeline::check_schedule(sched);  // every schedule checked before it runs
    return sched;
  }
  pipeline::validate(k, {P, s.micro_batches, 1});
  pipeline::Schedule sched{k, {P, s.micro_batches, 1}, {}};
  for (int stage = 0; stage < P; ++stage)
    sched.stages.push_back(ex::one_f_one_b(P, s.micro_batches, stage));  // exercise 18
  return sched;
}

}  // namespace dtl
