// The ZeRO lab: the same model and data trained under ZeRO stages 0 (plain DDP), 1, 2 and
// 3 (FSDP), every byte of memory and communication measured from the ranks' trace events
// beside the curriculum's formulas (core/theory/zero.h, seeds 001–004).
//
//   dtlab run zero --stage 0|1|2|3|all --ranks N [--precision bf16|fp16|fp32] [--master keep|none]
//                  [--prefetch on|off] [--prefetch-depth D] [--unit L] [--sweep prefetch] [--link nvlink4]
//
// How each stage holds and moves the model state: labs/zero/zero_rank.h. Every stage ends
// with the same weights as one rank training alone on the global batch (rank 0 trains it
// in this run), which the report checks along with the bytes.
#include "labs/zero/zero_lab.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/theory/collectives.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "labs/measure.h"
#include "labs/report_format.h"
#include "labs/shared_options.h"
#include "labs/train/data.h"
#include "labs/train/reference.h"
#include "labs/zero/zero_rank.h"

namespace dtl {

theory::ZeroPrecision ZeroSettings::bytes_per_param() const {
  const double es = double(dtype_size(precision));
  const double optimizer = precision == DType::f32 || master == MasterWeights::none ? 8 : 12;
  return {es, es, optimizer};
}

std::string stage_case(ZeroStage stage) { return "zero" + std::to_string(stage_number(stage)); }
std::string stage_phase(ZeroStage stage) { return "ZeRO-" + std::to_string(stage_number(stage)); }

// What a stage's phase span is, for the viewer (its words are stage_phase's).
Role phase_role(ZeroStage stage, bool sweeping, int depth) {
  return Role{.part = RunPart::timed,
              .zero_stage = std::int8_t(stage_number(stage)),
              .prefetch = std::int8_t(sweeping ? depth : -1)};
}

namespace {

std::vector<ZeroStage> stages_of(const ZeroSettings& s) {
  switch (s.stage) {
    case ZeroStageChoice::ddp: return {ZeroStage::ddp};
    case ZeroStageChoice::optimizer_states: return {ZeroStage::optimizer_states};
    case ZeroStageChoice::gradients: return {ZeroStage::gradients};
    case ZeroStageChoice::parameters: return {ZeroStage::parameters};
    case ZeroStageChoice::all: break;
  }
  return {ZeroStage::ddp, ZeroStage::optimizer_states, ZeroStage::gradients, ZeroStage::parameters};
}

// Options the chosen stages would not read are errors, not silently ignored, at any value.
void require_zero_options_apply(const LabOptions& o, const ZeroSettings& s, const std::vector<ZeroStage>& stages) {
  const OptionTable<ZeroSettings>& t = zero_option_table();
  const auto runs = [&](ZeroStage stage) { return std::find(stages.begin(), stages.end(), stage) != stages.end(); };
  if (!s.prefetch && t.given(o, &ZeroSettings::prefetch_depth))
    throw UsageError(
        "--prefetch-depth sets how far --prefetch on gathers ahead; with --prefetch off nothing is prefetched");
  if (!runs(ZeroStage::parameters) &&
      (t.given(o, &ZeroSettings::prefetch) || t.given(o, &ZeroSettings::prefetch_depth)))
    throw UsageError("--prefetch and --prefetch-depth are stage 3's (FSDP's parameter gathers): add --stage 3 or all");
  if (!runs(ZeroStage::ddp) && t.given(o, &ZeroSettings::bucket_mb))
    throw UsageError(
        "--bucket-mb sizes stage 0's all-reduce buckets; stages 1-3 reduce-scatter one unit at a time "
        "(set --unit): add --stage 0 or all");
  if (stages == std::vector<ZeroStage>{ZeroStage::ddp} && t.given(o, &ZeroSettings::layers_per_unit))
    throw UsageError(
        "--unit groups layers into ZeRO's sharding units; stage 0 (DDP) shards nothing: add --stage 1, 2, 3 "
        "or all");
  if (s.layers_per_unit > s.shape.layers)
    throw UsageError("--unit " + std::to_string(s.layers_per_unit) + " is more layers than the model's --depth " +
                     std::to_string(s.shape.layers) + ": give at most " + std::to_string(s.shape.layers));
  const int units = (s.shape.layers + s.layers_per_unit - 1) / s.layers_per_unit;
  if (t.given(o, &ZeroSettings::prefetch_depth) && s.prefetch_depth > units - 1)
    throw UsageError("--prefetch-depth " + std::to_string(s.prefetch_depth) +
                     " gathers more units ahead than there are: the " + "model has " + std::to_string(units) +
                     " units, so at most " + std::to_string(std::max(units - 1, 0)) +
                     " can be ahead of the one computing");
}

ZeroSettings settings_of(const LabConfig& cfg, int P) {
  ZeroSettings s = zero_option_table().parse(cfg.options);
  s.repeat = cfg.repeat;
  const std::vector<ZeroStage> stages = stages_of(s);
  if (s.batch % P != 0)
    throw UsageError("--batch " + std::to_string(s.batch) + " must divide evenly over " + std::to_string(P) + " ranks");
  if (s.sweep == ZeroSweep::prefetch && std::find(stages.begin(), stages.end(), ZeroStage::parameters) == stages.end())
    throw UsageError("--sweep prefetch sweeps stage 3's prefetch depth: run it with --stage 3 or --stage all");
  // Options the chosen stages would not read are errors, not silently ignored (a changed
  // default is the only sign of one given).
  require_zero_options_apply(cfg.options, s, stages);
  require_checkpoint_options(zero_option_table(), cfg.options, s, stages.size() == 1 && s.sweep == ZeroSweep::none,
                             "give --stage 0, 1, 2 or 3 (not all, no --sweep)");
  if (!s.prefetch) s.prefetch_depth = 0;
  if (s.master == MasterWeights::none && s.precision == DType::f32)
    throw UsageError(
        "--master none drops the fp32 master of 16-bit weights; with --precision fp32 the weights are "
        "their own master: use --precision bf16 or fp16");
  const double psi = double(parameter_count(s.shape));
  if (psi < P)
    throw UsageError("the model has " + format_number(psi) + " parameters, fewer than the " + std::to_string(P) +
                     " ranks it would be sharded over: raise --width/--depth or lower --ranks");
  // Thread ranks share this process: refuse before allocating anything, saying how much.
  require_memory(zero_process_bytes(s, P, int(stages.size())), "--width, --depth, --batch or --steps (or --ranks)");
  return s;
}

}  // namespace

double zero_process_bytes(const ZeroSettings& s, int P,
                          int /*stages run one after another, each freed before the next*/) {
  const int rows = s.batch / P;
  const double psi = double(parameter_count(s.shape));
  auto trainer = [&](DType t, int r) {  // a model, its AdamW and activations; stage 0 holds the most
    return mlp_memory(s.shape, t, r).total() +
           adamw_state_bytes(std::size_t(psi), t, t == DType::f32 ? MasterWeights::keep : s.master);
  };
  // Rank 0's references train first, one at a time, and keep 3 fp32 vectors (weights in the
  // run's precision and in fp32, first gradients). Then every rank trains, with a host copy
  // of its pieces for the checks, and rank 0 assembles weights and gradients (3 more).
  const double references =
      std::max(trainer(s.precision, s.batch), s.precision == DType::f32 ? 0.0 : trainer(DType::f32, s.batch));
  const double ranks = P * (trainer(s.precision, rows) + 4.0 * psi) + 3 * 4.0 * psi;
  const double data = 4.0 * double(s.batch) * s.train_steps() * (s.shape.in + s.shape.out) +
                      mlp_memory(s.shape, DType::f32, kTeacherChunk).total();
  return std::max(references, ranks) + 3 * 4.0 * psi + data;
}

namespace {

// One process training on the whole global batch on rank 0's device, as the ranks do together.
MlpReferenceRun train_one_rank(Comm& comm, const LabConfig& cfg, const ZeroSettings& s, DType precision,
                               const Dataset& data) {
  return train_mlp_reference(
      {s.shape, precision, s.master, s.adamw, s.batch, s.train_steps(), rank_device(cfg.device, comm)}, data);
}

ZeroReference reference_of(Comm& comm, const LabConfig& cfg, const ZeroSettings& s, const Dataset& data) {
  ZeroReference ref;
  if (comm.rank() != 0) return ref;
  report_progress(comm, cfg, "1-rank reference");
  ScopedSpan span(comm.trace(), comm.global_rank(), EventKind::phase,
                  comm.trace()->label(kReferencePhaseLabel, kReferenceRole));
  MlpReferenceRun run = train_one_rank(comm, cfg, s, s.precision, data);
  ref.weights = std::move(run.weights);
  ref.first_gradients = std::move(run.first_gradients);
  ref.step_seconds = repeated(run_means(run.step_seconds, s.steps));
  if (s.precision != DType::f32) ref.fp32_weights = train_one_rank(comm, cfg, s, DType::f32, data).weights;
  return ref;
}

// This rank's memory over a stage, replayed from its alloc/free events.
ZeroMemory memory_from_events(Comm& comm, std::size_t mark) {
  const EventLog& log = comm.trace()->log(comm.global_rank(), kStreamMain);
  ZeroMemory m;
  for (std::size_t i = mark; i < log.size(); ++i) m.apply(log[i]);
  return m;
}

// Bytes this rank's collectives put on its link since `mark`, as a ring moves them (what
// nccl-tests calls bus bytes): reduce-scatter and all-gather (P-1)/P of their buffer,
// all-reduce 2(P-1)/P. Library collectives record their buffer's bytes
// (core/comm/threads/threads_collectives.cpp); the ring factor is the formula's.
double bus_bytes_since(Comm& comm, std::size_t mark) {
  const EventLog& log = comm.trace()->log(comm.global_rank(), kStreamComm);
  const double P = comm.size();
  double bytes = 0;
  for (std::size_t i = mark; i < log.size(); ++i) {
    if (log[i].kind != EventKind::collective) continue;
    bytes += theory::ring_bus_bytes(comm.trace()->label_role(log[i].label).collective, P, double(log[i].bytes));
  }
  return bytes;
}

struct Timed {
  std::vector<double> step, exposed, gather, optimizer;
};

// Per step: the slowest rank's step; the mean over ranks of the time waiting on communication.
void combine_timings(Comm& comm, Timed& t, ZeroMeasurement& m, int steps) {
  comm.all_reduce(t.step.data(), t.step.data(), t.step.size(), DType::f64, ReduceOp::max);
  comm.all_reduce(t.exposed.data(), t.exposed.data(), t.exposed.size(), DType::f64, ReduceOp::avg);
  comm.all_reduce(t.gather.data(), t.gather.data(), t.gather.size(), DType::f64, ReduceOp::avg);
  comm.all_reduce(t.optimizer.data(), t.optimizer.data(), t.optimizer.size(), DType::f64, ReduceOp::max);
  m.optimizer = repeated(run_means(t.optimizer, steps));
  m.step = repeated(run_means(t.step, steps));
  m.exposed = repeated(run_means(t.exposed, steps));
  m.exposed_gather = repeated(run_means(t.gather, steps));
}

// Gathers every rank's memory picture and sizes on rank 0.
void gather_memory(Comm& comm, ZeroMeasurement& m, const ZeroMemory& mine, double exact, std::size_t reserved) {
  std::vector<double> row;
  row.push_back(double(mine.peak_total));
  for (int t = 0; t < kNumMemTags; ++t) row.push_back(double(mine.peak[t]));
  for (int t = 0; t < kNumMemTags; ++t) row.push_back(double(mine.at_peak[t]));
  row.push_back(exact);
  row.push_back(double(reserved));
  std::vector<double> all(row.size() * std::size_t(comm.size()));
  comm.all_gather(row.data(), all.data(), row.size(), DType::f64);
  for (int r = 0; r < comm.size(); ++r) {
    const double* v = all.data() + std::size_t(r) * row.size();
    ZeroMemory z;
    z.peak_total = std::uint64_t(v[0]);
    for (int t = 0; t < kNumMemTags; ++t) z.peak[t] = std::uint64_t(v[1 + t]);
    for (int t = 0; t < kNumMemTags; ++t) z.at_peak[t] = std::uint64_t(v[1 + kNumMemTags + t]);
    m.memory.push_back(z);
    m.exact_model_state.push_back(v[1 + 2 * kNumMemTags]);
    m.pool_reserved.push_back(std::size_t(v[2 + 2 * kNumMemTags]));
  }
}

ZeroMeasurement run_stage(Comm& comm, const LabConfig& cfg, const ZeroSettings& s, ZeroStage stage, int depth,
                          const Dataset& data, const ZeroReference& ref, const std::vector<float>* stage0_weights,
                          std::vector<float>* weights_out) {
  ZeroMeasurement m;
  m.stage = stage;
  m.prefetch_depth = depth;
  const bool sweeping = s.sweep == ZeroSweep::prefetch && shards_params(stage);
  const std::string name = stage_phase(stage) + (sweeping ? " depth " + std::to_string(depth) : "");
  comm.barrier();
  ScopedSpan phase(comm.trace(), comm.global_rank(), EventKind::phase,
                   comm.trace()->label(name, phase_role(stage, sweeping, depth)));
  ZeroRank rank(comm, cfg, s, stage, depth);
  const int rows = s.batch / comm.size();
  Timed timed;
  std::vector<float> first_grads;
  double bus = 0;
  const int first = zero_resume(comm, s, rank, m);
  for (int step = first; step < s.train_steps(); ++step) {  // step 0 touches every buffer: a warm-up, not timed
    report_progress(comm, cfg, name + ": step " + std::to_string(step + 1) + " of " + std::to_string(s.train_steps()));
    const std::size_t comm_mark = comm.trace()->log(comm.global_rank(), kStreamComm).size();
    ZeroStepTiming t;
    float loss = rank.train_step(data, step * s.batch + comm.rank() * rows, rows, step, t);
    bus += bus_bytes_since(comm, comm_mark);
    if (step == 0) first_grads = rank.full_gradients();
    if (step > 0) {
      timed.step.push_back(t.step);
      timed.exposed.push_back(t.exposed);
      timed.gather.push_back(t.exposed_gather);
      timed.optimizer.push_back(t.optimizer);
    }
    comm.all_reduce(&loss, &loss, 1, DType::f32, ReduceOp::avg);  // the global batch's loss
    (step == 0 ? m.first_loss : m.last_loss) = loss;
    zero_checkpoint_after(comm, cfg, s, rank, step + 1, m);
  }
  m.bus_bytes_per_step = bus / (s.train_steps() - first);
  // Between steps no pooled buffer is in use: the pool's reserve is all the device holds beyond the tracker.
  m.device_vs_tracker = device_vs_tracker_bytes(comm, rank.memory(), rank.device(), double(rank.pool_reserved()));
  combine_timings(comm, timed, m, s.steps);
  const std::vector<float> weights = rank.full_weights();
  if (comm.rank() == 0) {
    m.max_vs_reference = max_abs_difference(weights, ref.weights);
    m.max_vs_fp32 = ref.fp32_weights.empty() ? 0 : max_abs_difference(weights, ref.fp32_weights);
    double diff = 0, scale = 1e-30;
    for (std::size_t i = 0; i < first_grads.size(); ++i) {
      diff = larger_difference(diff, double(std::fabs(first_grads[i] - ref.first_gradients[i])));
      scale = std::max(scale, double(std::fabs(ref.first_gradients[i])));
    }
    m.first_grad_rel_diff = diff / scale;
    if (weights_out) *weights_out = weights;
    if (stage != ZeroStage::ddp && stage0_weights && !stage0_weights->empty())
      m.max_vs_stage0 = max_abs_difference(weights, *stage0_weights);
  }
  gather_memory(comm, m, memory_from_events(comm, rank.memory_mark()), rank.exact_model_state(), rank.pool_reserved());
  m.padding = rank.units().padding();
  m.units = int(rank.units().units.size());
  m.buckets = rank.bucket_count();
  m.skipped_steps = rank.skipped_steps();
  return m;
}

// The memory view's formula line per stage: trace metadata keyed by the stage's phase role.
void set_formula_meta(Comm& comm, const ZeroSettings& s, ZeroStage stage, double psi, const Role& phase) {
  if (comm.rank() != 0) return;
  const theory::ZeroBytes b = theory::zero_bytes_per_param(stage_number(stage), comm.size(), s.bytes_per_param());
  char text[160];
  std::snprintf(text, sizeof text, "%s + %s + %s = %.3g B/param x %.0f params", format_number(b.params).c_str(),
                format_number(b.grads).c_str(), format_number(b.optimizer).c_str(), b.total(), psi);
  comm.trace()->set_meta(meta_key_name(MetaKey::phase_formula_bytes, role_key(phase)), std::to_string(psi * b.total()));
  comm.trace()->set_meta(meta_key_name(MetaKey::phase_formula_text, role_key(phase)), text);
}

}  // namespace

Report run_zero_lab(Comm& comm, const LabConfig& cfg) {
  if (!comm.trace()) throw Error("the ZeRO lab measures from trace events; run it with tracing on");
  kernels::use_one_blas_thread();
  const ZeroSettings s = settings_of(cfg, comm.size());
  const std::vector<ZeroStage> stages = stages_of(s);
  const Dataset data = make_teacher_data(s.shape, s.batch * s.train_steps(), 7);
  const std::size_t psi = parameter_count(s.shape);
  Report rep = start_report(comm, cfg, "zero");
  const ZeroReference ref = reference_of(comm, cfg, s, data);
  std::vector<float> stage0;
  std::vector<ZeroMeasurement> sweep;
  int units = 0;
  for (ZeroStage stage : stages) {
    const bool sweeping = shards_params(stage) && s.sweep == ZeroSweep::prefetch;
    std::vector<int> depths = {s.prefetch_depth};
    if (sweeping) {  // off, 1, 2, 4 units ahead, and the run's own depth
      depths = {0, 1, 2, 4, s.prefetch_depth};
      std::sort(depths.begin(), depths.end());
      depths.erase(std::unique(depths.begin(), depths.end()), depths.end());
    }
    for (int depth : depths) {
      set_formula_meta(comm, s, stage, double(psi), phase_role(stage, sweeping, depth));
      ZeroMeasurement m =
          run_stage(comm, cfg, s, stage, depth, data, ref, &stage0, stage == ZeroStage::ddp ? &stage0 : nullptr);
      units = m.units;
      if (sweeping) sweep.push_back(m);
      if (depth == s.prefetch_depth) add_zero_rows(rep, s, m, psi, comm.size());
    }
  }
  describe_zero_setup(rep, s, stages, psi, units);
  rep.add("one_rank_step_time", "step time of 1 rank on the global batch", 0, "s").over(ref.step_seconds);
  // Stage 0's step time by value: rep.add grows the rows, so a pointer into them would dangle.
  const ReportRow* ddp_row = rep.find("zero0.step_time");
  const double ddp = ddp_row ? ddp_row->measured : 0;
  if (stages.size() > 1) {
    for (ZeroStage stage : stages) rep.columns.push_back(stage_case(stage));
    for (ZeroStage stage : {ZeroStage::optimizer_states, ZeroStage::gradients, ZeroStage::parameters})
      if (const ReportRow* r = rep.find(stage_case(stage) + ".step_time"); r && ddp > 0)
        rep.add(stage_case(stage) + ".step_vs_ddp", "step time / stage 0's", r->measured / ddp, "x");
  }
  if (!sweep.empty()) add_prefetch_sweep(rep, sweep, ddp);
  return rep;
}

const OptionTable<ZeroSettings>& zero_option_table() {
  static const OptionTable<ZeroSettings> table = [] {
    OptionTable<ZeroSettings> t;
    t.choice("stage", &ZeroSettings::stage, ZeroStageChoice::all,
             {{ZeroStageChoice::ddp, "0"},
              {ZeroStageChoice::optimizer_states, "1"},
              {ZeroStageChoice::gradients, "2"},
              {ZeroStageChoice::parameters, "3"},
              {ZeroStageChoice::all, "all"}},
             "what is sharded: 0 nothing (DDP), 1 optimizer, 2 + gradients, 3 + parameters")
        .choice("precision", &ZeroSettings::precision, DType::bf16, kPrecisionNames,
                "bf16/fp16 mixed (16-bit params and grads, fp32 master, m, v) or fp32")
        .choice("master", &ZeroSettings::master, MasterWeights::keep,
                {{MasterWeights::keep, "keep"}, {MasterWeights::none, "none"}},
                "mixed precision: keep an fp32 master (16 B/param) or not (12 B/param)")
        .choice("prefetch", &ZeroSettings::prefetch, true, kOnOffNames,
                "stage 3: all-gather the next units while one computes")
        .integer("prefetch-depth", &ZeroSettings::prefetch_depth, 1, 1, 64,
                 "stage 3: units gathered ahead with --prefetch on")
        .integer("unit", &ZeroSettings::layers_per_unit, 1, 1, 1024,
                 "layers per sharding unit (1: every layer its own, as FSDP per module)")
        .number("bucket-mb", &ZeroSettings::bucket_mb, 25.0, 1e-6, 1 << 20,
                "stage 0: DDP's all-reduce bucket capacity in MiB")
        .choice("sweep", &ZeroSettings::sweep, ZeroSweep::none,
                {{ZeroSweep::none, "none"}, {ZeroSweep::prefetch, "prefetch"}},
                "prefetch: run stage 3 at depths 0, 1, 2, 4 (memory against exposed time)");
    add_mlp_rows(t, {.width = 512, .depth = 6, .batch = 32, .steps = 3});
    add_checkpoint_rows(t);
    return t;
  }();
  return table;
}

namespace ex {
std::span<const ExerciseHints> zero_hints();  // exercises/zero_hints.cpp
}  // namespace ex

LabInfo zero_lab_info() {
  return {
      "zero",
      "ZeRO stages 0 (DDP), 1, 2, 3 (FSDP): sharded optimizer state, gradients, parameters; memory and bytes vs "
      "formulas",
      {RunOption::slow_rank, RunOption::faults, RunOption::repeat, RunOption::device, RunOption::step},
      zero_option_table().specs(),
      {{"shard_range", "ShardRange", 5},
       {"reduce_scatter_gradients", "ReduceScatterGradients", 10},
       {"shard_step", "ShardStep", 5},
       {"all_gather_params", "AllGatherParams", 10},
       {"units_to_gather", "UnitsToGather", 10}},
      run_zero_lab,
      nullptr,
      StepUnit::collectives,  // ZeRO posts no sends: faults count its collectives
      /*overlaps_compute=*/true,
      {ViewKind::memory, ViewKind::timeline, ViewKind::report, ViewKind::what_if},
      {{"steps", "1"}, {"width", "256"}},
      zero_option_table().settings_text(),
      ex::zero_hints(),
      [](const LabConfig& c) { settings_of(c, c.ranks); },
      // small_run: the tests start from it (lab.h)
      {{"ranks", "2"}, {"width", "32"}, {"depth", "3"}, {"batch", "8"}, {"steps", "2"}, {"repeat", "1"}},
  };
}

}  // namespace dtl
