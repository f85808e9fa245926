// The schedules the pipeline lab runs (pipeline_lab.h): what --schedule names, and each one's
// per-stage lists — core/theory's, or built from the learner's exercises (one_f_one_b, and
// split_backward for the zero-bubble splits).
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

// ZB-H1 and interleaved-zb: 1F1B's and interleaving's lists (core/theory's) with each stage's
// backward split by the learner's split_backward (lag = the stage), checked like any schedule: a
// list that breaks a rule is the exercise's fault, so it fails the run (exit 1), naming it.
namespace {
pipeline::Schedule split_schedule(ScheduleKind k, const PipelineSettings& s, int P) {
  const ScheduleKind base = k == ScheduleKind::zb_h1 ? ScheduleKind::one_f_one_b : ScheduleKind::interleaved;
  pipeline::Schedule sched = pipeline::make_schedule(base, pipeline::config_for(base, P, s.micro_batches, s.chunks));
  sched.kind = k;
  for (int stage = 0; stage < P; ++stage)
    sched.stages[std::size_t(stage)] = ex::split_backward(sched.stages[std::size_t(stage)], stage);  // exercise
  try {
    pipeline::check_schedule(sched);
  } catch (const UsageError& e) {
    throw Error(std::string("split_backward (your exercise) gave an invalid ") + pipeline::schedule_name(k) +
                " schedule: " + e.what());
  }
  return sched;
}
}  // namespace

pipeline::Schedule schedule_of(ScheduleKind k, const PipelineSettings& s, int P) {
  if (k == ScheduleKind::csv) return s.csv->schedule;  // read and checked by the settings
  if (k == ScheduleKind::zb_h1 || k == ScheduleKind::interleaved_zb) return split_schedule(k, s, P);
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
