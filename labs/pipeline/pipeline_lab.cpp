// The pipeline lab: the MLP's layers split over P stages (one per rank), each global batch
// cut into M micro-batches that flow through the stages under a schedule — GPipe, 1F1B,
// interleaved 1F1B, zero-bubble H1 and H2, ZB-V, interleaved with the W split, DualPipeV
// (schedule.h), or one read from torch.distributed.pipelining's CSV — activations sent
// forward and their gradients back point to point, gradients accumulated over the
// micro-batches, one AdamW step per stage. Every schedule ends with the weights of one rank
// on the global batch.
//
//   dtlab run pipeline --schedule gpipe|1f1b|interleaved|zb-h1|zb-h2|zb-v|interleaved-zb|
//                                 dualpipev|all --ranks P --micro-batches M
//                      [--chunks v] [--depth L] [--compute-us F --backward-us B --weight-us W]
//   dtlab run pipeline --schedule-csv FILE --ranks P     (torch's CSV: schedule_csv.h)
//   dtlab run pipeline --schedule zb-v --ranks 4 --export-csv FILE   (the schedule, for torch)
//
// --compute-us makes each action last a fixed time (the real compute still runs inside
// it), so the bubble is measured on a clean timeline even on a noisy 2-core machine.
#include "labs/pipeline/pipeline_lab.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "exercises/pipeline.h"
#include "labs/measure.h"
#include "labs/pipeline/pipeline_stage.h"
#include "labs/shared_options.h"
#include "labs/train/data.h"
#include "labs/train/reference.h"

namespace dtl {

namespace {

using pipeline::ScheduleKind;

bool any_of_kinds(const std::vector<ScheduleKind>& kinds, std::initializer_list<ScheduleKind> these) {
  for (ScheduleKind k : kinds)
    if (std::find(these.begin(), these.end(), k) != these.end()) return true;
  return false;
}

// The action times' options: --backward-us and --weight-us need --compute-us, W needs a split.
void check_times(PipelineSettings& s, const std::vector<ScheduleKind>& kinds) {
  if (s.forward_us <= 0 && (s.backward_us > 0 || s.weight_us > 0))
    throw UsageError("--backward-us and --weight-us need --compute-us (the forward's time) too");
  if (s.forward_us > 0 && s.backward_us <= 0) s.backward_us = 2 * s.forward_us;
  const bool split = any_of_kinds(kinds, {ScheduleKind::zb_h1, ScheduleKind::zb_h2, ScheduleKind::zb_v,
                                          ScheduleKind::interleaved_zb, ScheduleKind::dualpipe_v}) ||
                     (s.csv && s.csv->schedule.has_weight_actions());
  if (s.weight_us > 0 && !split)
    throw UsageError(
        "--weight-us is the W part of a split backward: use a zero-bubble schedule (zb-h1, zb-h2, zb-v, "
        "interleaved-zb, dualpipev) or all");
  if (s.forward_us > 0 && s.weight_us <= 0) s.weight_us = s.backward_us / 2;
  if (s.weight_us >= s.backward_us && s.forward_us > 0)
    throw UsageError("--weight-us must be below --backward-us: W is a part of the backward");
}

PipelineSettings settings_of(const LabConfig& cfg, int P) {
  PipelineSettings s = pipeline_option_table().parse(cfg.options);
  s.repeat = cfg.repeat;
  if (!s.schedule_csv.empty()) read_schedule_csv(cfg, s, P);
  const std::vector<ScheduleKind> kinds = kinds_of(s);
  if (s.stages != 0 && s.stages != P)
    throw UsageError("--stages " + std::to_string(s.stages) + " but --ranks " + std::to_string(P) +
                     ": every rank is one stage; give --ranks " + std::to_string(s.stages));
  if (!any_of_kinds(kinds, {ScheduleKind::interleaved, ScheduleKind::interleaved_zb}) && s.chunks != 2)
    throw UsageError(
        "--chunks sets the model chunks per stage of --schedule interleaved and interleaved-zb; the others hold one "
        "(zb-v and dualpipev two)");
  if (!s.export_csv.empty() && kinds.size() != 1)
    throw UsageError("--export-csv writes one schedule: choose one with --schedule");
  if (s.batch % s.micro_batches != 0)
    throw UsageError("--batch " + std::to_string(s.batch) + " must divide into --micro-batches " +
                     std::to_string(s.micro_batches));
  check_times(s, kinds);
  for (ScheduleKind k : kinds) {  // the configuration against each schedule's rules, before anything runs
    const pipeline::ScheduleConfig c =
        s.csv ? s.csv->schedule.config : pipeline::config_for(k, P, s.micro_batches, s.chunks);
    pipeline::validate(k, c);
    if (s.shape.layers < P * c.chunks)
      throw UsageError("--depth " + std::to_string(s.shape.layers) + " layers cannot fill " +
                       std::to_string(P * c.chunks) + " (virtual) stages of " +
                       std::string(pipeline::schedule_name(k)) + ": raise --depth or lower --ranks" +
                       (c.chunks > 1 ? " or --chunks" : ""));
  }
  require_memory(
      P * (mlp_memory(s.shape, DType::f32, s.batch).total() * 2 + 8.0 * mlp_memory(s.shape, DType::f32, 1).params) +
          4.0 * s.batch * s.train_steps() * (s.shape.in + s.shape.out),
      "--width, --depth, --batch or --micro-batches (or --ranks)");
  require_checkpoint_options(pipeline_option_table(), cfg.options, s, kinds.size() == 1,
                             "give one --schedule (not all)");
  if (s.emulated() && (s.checkpoint_every > 0 || !s.resume.empty()))
    throw UsageError("--compute-us emulates the compute, so no weights change to save or resume: drop one of them");
  return s;
}

// Rank 0 trains the whole model alone on the global batch, on its device: what every
// schedule must equal.
std::vector<float> one_rank_weights(const PipelineSettings& s, const Dataset& data, Device device) {
  return train_mlp_reference({s.shape, DType::f32, MasterWeights::keep, s.adamw, s.batch, s.train_steps(), device},
                             data)
      .weights;
}

// The whole step across stages: from the earliest first action to the latest last action
// (the step as the timeline draws it, viz/model/step_idle.h: no set-up before the first
// action counts as bubble); and the longest stage's own span, first action to last (what a
// step takes when the next one starts on each stage as soon as it is done: Simulation::bubble_tiled).
struct StepAcross {
  double makespan = 0, busy_sum = 0, longest_span = 0;
  std::vector<double> busy;  // per stage
};
StepAcross across_stages(Comm& comm, const StageStep& r) {
  double times[3] = {-(r.first < 0 ? r.begin : r.first), r.end, r.end - (r.first < 0 ? r.end : r.first)};
  comm.all_reduce(times, times, 3, DType::f64, ReduceOp::max);
  std::vector<double> busy(std::size_t(comm.size()));
  comm.all_gather(&r.busy, busy.data(), 1, DType::f64);
  StepAcross a{times[1] + times[0], 0, times[2], busy};
  for (double b : busy) a.busy_sum += b;
  return a;
}

// The simulator's timeline of this schedule with this run's action times, for the
// visualizer's side-by-side comparison (it draws it without running the simulator):
// meta "pipeline_simulated.<schedule>" = {"stages", "micro_batches", "chunks", "makespan",
// "bubble", "actions": [[stage, "F"|"B"|"W", micro-batch, chunk, begin, end], ...],
// "action_times": [F, B, W]}, seconds; action_times are one stage's whole model as the formulas
// take them (B the full backward, W -1 when not split), what the viewer's what-if panel reruns.
void set_simulation_meta(Comm& comm, const std::string& name, const pipeline::Schedule& sched,
                         const pipeline::Simulation& sim, const pipeline::ActionTimes& stage_times) {
  nlohmann::json j = {{"stages", sched.config.stages},
                      {"micro_batches", sched.config.micro_batches},
                      {"chunks", sched.config.chunks},
                      {"makespan", sim.makespan},
                      {"bubble", sim.bubble_fraction()},
                      {"action_times", {stage_times.forward, stage_times.backward, stage_times.weight}}};
  j["actions"] = nlohmann::json::array();
  for (const pipeline::TimedAction& a : sim.actions)
    j["actions"].push_back({a.stage, pass_letter(a.action.op), a.action.micro_batch, a.action.chunk, a.begin, a.end});
  comm.trace()->set_meta(meta_key_name(MetaKey::pipeline_simulated, name), j.dump());
}

// The action times of this run for the simulator and the formulas, one stage's whole model
// (a chunk's action takes 1/v): the --compute-us times the actions are stretched to, or
// the measured means (this stage's; the others' alike), B the full backward.
pipeline::ActionTimes run_times(Comm& comm, const PipelineSettings& s, const pipeline::Schedule& sched,
                                const StageStep& totals) {
  if (s.emulated()) return {s.forward_us * 1e-6, s.backward_us * 1e-6, s.weight_us * 1e-6, 0};
  double times[3] = {totals.forward / std::max(1, totals.forwards), totals.backward / std::max(1, totals.backwards),
                     totals.weight / std::max(1, totals.weights)};
  comm.all_reduce(times, times, 3, DType::f64, ReduceOp::avg);
  const double v = sched.config.chunks;
  const bool split = sched.has_weight_actions();  // B and W measured apart; the full backward is their sum
  return {v * times[0], v * (split ? times[1] + times[2] : times[1]), split ? v * times[2] : -1, 0};
}

// The simulator with the run's action times: the bubble the schedule would have with exactly
// these times (both conventions), and its timeline in the trace.
void simulate_run(Comm& comm, const pipeline::Schedule& sched, const pipeline::ActionTimes& stage_times,
                  const std::string& name, PipelineMeasurement& m) {
  const double v = sched.config.chunks;
  const pipeline::ActionTimes per_chunk{stage_times.forward / v, stage_times.backward / v,
                                        stage_times.weight < 0 ? -1 : stage_times.weight / v, 0};
  const pipeline::Simulation sim = pipeline::simulate(sched, per_chunk);
  if (comm.rank() == 0) set_simulation_meta(comm, name, sched, sim, stage_times);
  m.simulated_bubble = sim.bubble_fraction();
  m.simulated_tiled = sim.bubble_tiled();
}

// Memory and in-flight micro-batches per stage, gathered on rank 0, beside what the
// schedule kind predicts. `expected` is core/theory's own schedule of that kind, never the one
// the run executed: a learner's one_f_one_b that runs every forward first must fail the
// in-flight check (GPipe's M against 1F1B's min(M, P − s)), not predict its own result.
void gather_stage_memory(Comm& comm, const PipelineSettings& s, const pipeline::Schedule& expected,
                         PipelineStage& stage, PipelineMeasurement& m) {
  const double mine[2] = {double(stage.memory().peak(MemTag::activation)), double(stage.in_flight_peak())};
  std::vector<double> all(2 * std::size_t(comm.size()));
  comm.all_gather(mine, all.data(), 2, DType::f64);
  for (int st = 0; st < comm.size(); ++st) {
    m.stage_activation_peak.push_back(all[2 * std::size_t(st)]);
    m.stage_in_flight_peak.push_back(all[2 * std::size_t(st) + 1]);
    m.forwards_before_backward.push_back(pipeline::forwards_before_first_backward(expected, st));
    m.predicted_in_flight.push_back(pipeline::max_in_flight(expected, st));
    m.published_in_flight.push_back(pipeline::published_in_flight(expected.kind, expected.config, st));
    m.predicted_activation.push_back(predicted_activation_peak(s, expected, st));
  }
}

// Overlapped F&B pairs (an F marked with_next) in one stage's list.
int pairs_in(const std::vector<pipeline::Action>& list) {
  return int(std::count_if(list.begin(), list.end(), [](const pipeline::Action& a) { return a.with_next; }));
}

// Where the run put the model (the stage whose forwards computed the loss) and the pairs each stage
// ran, beside core/theory's schedule of the kind: a V computes the loss on stage 0, beside the data.
void gather_layout(Comm& comm, const pipeline::Schedule& ran, const pipeline::Schedule& expected, const StageStep& r,
                   PipelineMeasurement& m) {
  double holder = r.losses > 0 ? comm.rank() : -1;
  comm.all_reduce(&holder, &holder, 1, DType::f64, ReduceOp::max);
  m.loss_stage = int(holder);
  m.predicted_loss_stage = expected.stage_of(expected.virtual_stages() - 1);
  for (int st = 0; st < comm.size(); ++st) {
    m.stage_pairs.push_back(pairs_in(ran.stages[std::size_t(st)]));
    m.predicted_pairs.push_back(pairs_in(expected.stages[std::size_t(st)]));
  }
}

// Per stage over the timed steps: 1 − busy / step.
std::vector<double> stage_bubbles(const std::vector<double>& step_times,
                                  const std::vector<std::vector<double>>& stage_busy, int stages) {
  std::vector<double> out;
  for (int st = 0; st < stages; ++st) {
    double busy = 0, span = 0;
    for (std::size_t i = 0; i < stage_busy.size(); ++i) busy += stage_busy[i][std::size_t(st)], span += step_times[i];
    out.push_back(span > 0 ? 1 - busy / span : 0);
  }
  return out;
}

PipelineMeasurement run_schedule(Comm& comm, const LabConfig& cfg, const PipelineSettings& s, ScheduleKind kind,
                                 const Dataset& data, const std::vector<float>& reference) {
  const pipeline::Schedule sched = schedule_of(kind, s, comm.size());  // what runs
  const pipeline::Schedule expected =  // what theory predicts (a csv schedule: the file's own list)
      kind == ScheduleKind::csv ? sched : pipeline::make_schedule(kind, sched.config);  // (config_for's)
  const std::string name = pipeline::schedule_name(kind);
  comm.barrier();
  ScopedSpan phase(comm.trace(), comm.global_rank(), EventKind::phase,
                   comm.trace()->label(name, Role{.part = RunPart::timed, .schedule = kind}));
  PipelineStage stage(comm, cfg, s, sched);
  const Role schedule_role{.part = RunPart::timed, .schedule = kind};
  publish_memory_formula(
      comm, double(stage.local_params()), predicted_activation_peak(s, expected, comm.rank()),
      "16 B/param x the stage's parameters + its micro-batches in flight x their activations (the schedule's)",
      &schedule_role);
  PipelineMeasurement m;
  m.kind = kind;
  m.chunks = sched.config.chunks;
  std::vector<double> step_times, bubbles, tiled;
  std::vector<std::vector<double>> stage_busy;
  StageStep totals;
  const int first = resume_stage(comm, s, stage, m.checkpoints);
  for (int step = first; step < s.train_steps(); ++step) {
    report_progress(comm, cfg, name + ": step " + std::to_string(step + 1) + " of " + std::to_string(s.train_steps()));
    const StageStep r = stage.train_step(data, step);
    const StepAcross a = across_stages(comm, r);
    float loss = r.loss;
    comm.all_reduce(&loss, &loss, 1, DType::f32, ReduceOp::sum);  // only the last stage has it
    (step == 0 ? m.first_loss : m.last_loss) = loss;
    if (step == first) gather_layout(comm, sched, expected, r, m);
    m.p2p_bytes_per_step += r.sent_bytes;
    checkpoint_if_due(comm, checkpoint_plan(s),
                      {step + 1, std::uint64_t(step + 1) * std::uint64_t(s.batch), kMlpDataSeed, "pipeline"},
                      m.checkpoints, [&] { return stage.stage_checkpoint(); });
    if (step == 0) continue;  // a warm-up, not timed
    step_times.push_back(a.makespan);
    bubbles.push_back(1 - a.busy_sum / (comm.size() * a.makespan));
    tiled.push_back(1 - a.busy_sum / (comm.size() * a.longest_span));
    stage_busy.push_back(a.busy);
    totals.forward += r.forward, totals.backward += r.backward, totals.weight += r.weight;
    totals.forwards += r.forwards, totals.backwards += r.backwards, totals.weights += r.weights;
  }
  finish_checkpoints(comm, m.checkpoints);
  m.device_vs_tracker = device_vs_tracker_bytes(comm, stage.memory(), stage.device());
  comm.all_reduce(&m.p2p_bytes_per_step, &m.p2p_bytes_per_step, 1, DType::f64, ReduceOp::sum);
  m.p2p_bytes_per_step /= s.train_steps() - first;
  m.step = repeated(run_means(step_times, s.steps));
  m.bubble = repeated(run_means(bubbles, s.steps));
  m.bubble_tiled = repeated(run_means(tiled, s.steps));
  m.stage_bubble = stage_bubbles(step_times, stage_busy, comm.size());
  const pipeline::ActionTimes times = run_times(comm, s, sched, totals);
  simulate_run(comm, sched, times, name, m);
  m.published = pipeline::published_bubble(kind, sched.config, times);
  gather_stage_memory(comm, s, expected, stage, m);
  const std::vector<float> weights = stage.weights_on_rank0();
  if (comm.rank() == 0) { m.max_vs_reference = max_abs_difference(weights, reference); }
  return m;
}

}  // namespace

Report run_pipeline_lab(Comm& comm, const LabConfig& cfg) {
  if (!comm.trace()) throw Error("the pipeline lab measures from trace events; run it with tracing on");
  kernels::use_one_blas_thread();
  const PipelineSettings s = settings_of(cfg, comm.size());
  const std::vector<ScheduleKind> kinds = kinds_of(s);
  const Dataset data = make_teacher_data(s.shape, s.batch * s.train_steps(), 7);
  Report rep = start_report(comm, cfg, "pipeline");
  std::vector<float> reference;
  if (comm.rank() == 0) {
    ScopedSpan span(comm.trace(), comm.global_rank(), EventKind::phase,
                    comm.trace()->label(kReferencePhaseLabel, kReferenceRole));
    reference = one_rank_weights(s, data, rank_device(cfg.device, comm));
  }
  describe_pipeline_setup(rep, s, kinds);
  if (!s.export_csv.empty() && comm.rank() == 0) {
    export_schedule_csv(s, schedule_of(kinds.front(), s, comm.size()));
    rep.notes.push_back("The " + std::string(pipeline::schedule_name(kinds.front())) + " schedule was written to " +
                        s.export_csv + " in torch.distributed.pipelining's CSV format (compute only).");
  }
  for (ScheduleKind k : kinds) add_pipeline_rows(rep, s, run_schedule(comm, cfg, s, k, data, reference), comm.size());
  if (kinds.size() > 1)
    for (ScheduleKind k : kinds) rep.columns.push_back(pipeline::schedule_name(k));
  return rep;
}

const OptionTable<PipelineSettings>& pipeline_option_table() {
  static const OptionTable<PipelineSettings> table = [] {
    OptionTable<PipelineSettings> t;
    t.choice("schedule", &PipelineSettings::schedule, ScheduleChoice::one_f_one_b,
             {{ScheduleChoice::gpipe, "gpipe"},
              {ScheduleChoice::one_f_one_b, "1f1b"},
              {ScheduleChoice::interleaved, "interleaved"},
              {ScheduleChoice::zb_h1, "zb-h1"},
              {ScheduleChoice::zb_h2, "zb-h2"},
              {ScheduleChoice::zb_v, "zb-v"},
              {ScheduleChoice::interleaved_zb, "interleaved-zb"},
              {ScheduleChoice::dualpipe_v, "dualpipev"},
              {ScheduleChoice::all, "all"}},
             "the order each stage computes in")
        .path("schedule-csv", &PipelineSettings::schedule_csv,
              "run this torch.distributed.pipelining schedule CSV (one row per rank: 0F0, 1I3, 2W0, "
              "(0F7;7B3)OVERLAP_F_B); checked before it runs")
        .path("export-csv", &PipelineSettings::export_csv,
              "write the schedule in torch.distributed.pipelining's CSV format (compute only)", /*writes=*/true)
        .integer("stages", &PipelineSettings::stages, 0, 0, 4096, "pipeline stages: every rank is one (0: as --ranks)")
        .integer("micro-batches", &PipelineSettings::micro_batches, 8, 1, 4096, "micro-batches per step (M)")
        .integer("chunks", &PipelineSettings::chunks, 2, 1, 64,
                 "model chunks per stage for --schedule interleaved and interleaved-zb (v)")
        .number("compute-us", &PipelineSettings::forward_us, 0.0, 0, 1e5,
                "a stage's forward of one micro-batch lasts this many µs (interleaved: 1/v per chunk; 0: the real "
                "compute's "
                "time)")
        .number("backward-us", &PipelineSettings::backward_us, 0.0, 0, 2e5,
                "each backward's µs with --compute-us (0: twice the forward)")
        .number("weight-us", &PipelineSettings::weight_us, 0.0, 0, 2e5,
                "zero-bubble schedules: the W part of the backward, µs (0: half the backward)");
    add_mlp_rows(t, {.width = 128,
                     .depth = 8,
                     .batch = 64,
                     .steps = 2,
                     .depth_help = "linear layers of the MLP (split over the stages)",
                     .batch_help = "global batch (cut into the micro-batches)"});
    add_checkpoint_rows(t);
    return t;
  }();
  return table;
}

namespace ex {
std::span<const ExerciseHints> pipeline_hints();  // exercises/pipeline_hints.cpp
}  // namespace ex

LabInfo pipeline_lab_info() {
  return {
      "pipeline",
      "pipeline parallelism: GPipe, 1F1B, interleaved, zero-bubble H1/H2/V, DualPipeV, torch's CSV schedules; "
      "bubbles and activation memory vs formulas",
      {RunOption::faults, RunOption::repeat, RunOption::device, RunOption::step},
      pipeline_option_table().specs(),
      {{"one_f_one_b", "OneFOneB", 15},
       {"run_stage", "RunStage", 15},
       {"split_backward", "SplitBackward", 10},
       {"vee_stage", "VeeStage", 5},
       {"dualpipe_pairs", "DualpipePairs", 10}},
      run_pipeline_lab,
      nullptr,
      StepUnit::transfers,  // stages talk point to point: faults count their sends
      /*overlaps_compute=*/false,
      {kPipelineView, ViewKind::timeline, ViewKind::memory, ViewKind::report, ViewKind::what_if},
      {{"micro-batches", "8"}, {"compute-us", "2000"}},
      pipeline_option_table().settings_text(),
      ex::pipeline_hints(),
      [](const LabConfig& c) { settings_of(c, c.ranks); },
      // small_run: the tests start from it (lab.h)
      {{"ranks", "2"},
       {"width", "16"},
       {"depth", "4"},
       {"batch", "8"},
       {"micro-batches", "4"},
       {"steps", "1"},
       {"repeat", "1"}},
  };
}

}  // namespace dtl
