// The DDP lab: data parallelism four ways, on the same MLP and data.
//
//   dtlab run ddp --variant naive|flat|bucketed|accumulate|all --ranks 4 [--bucket-mb 25] [--link pcie4]
//
// naive       after backward, one all-reduce per parameter tensor, one after another
// flat        after backward, one all-reduce of the whole gradient buffer
// bucketed    PyTorch DDP: gradients grouped into buckets in reverse layer order; each
//             bucket's async all-reduce starts the moment its last gradient is ready during
//             backward (the model's after_backward hook), so communication overlaps the rest
//             of backward; wait before the step
// accumulate  k micro-batches per step; the first k-1 skip communication (no_sync) and
//             only the last one reduces, bucketed
//
// Every rank holds the full model and 1/P of the global batch; averaged gradients make N
// ranks equal one rank on the global batch, which rank 0 checks against a single-process
// reference. Memory is tagged so the report holds 16 bytes/parameter (fp32 weights, grads,
// AdamW m and v) against what was allocated.
#include "labs/ddp/ddp_lab.h"

#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "exercises/ddp.h"
#include "labs/measure.h"
#include "labs/shared_options.h"
#include "labs/train/buckets.h"
#include "labs/train/data.h"
#include "labs/train/device_batch.h"
#include "labs/train/optimizer.h"
#include "labs/train/reference.h"
#include "labs/train/step_clock.h"

namespace dtl {

namespace {

DdpSettings settings_of(const LabConfig& cfg, int P) {
  const OptionTable<DdpSettings>& table = ddp_option_table();
  DdpSettings s = table.parse(cfg.options);
  s.repeat = cfg.repeat;
  if (s.batch % P != 0)
    throw UsageError("--batch " + std::to_string(s.batch) + " must divide evenly over " + std::to_string(P) + " ranks");
  const DdpVariant variant = s.variant;
  const bool accumulates = variant == DdpVariant::accumulate || variant == DdpVariant::all;
  // Options the chosen variant would not read are errors, not silently ignored.
  if (table.given(cfg.options, &DdpSettings::micro) && !accumulates)
    throw UsageError("--micro-batches splits a step for --variant accumulate (or all); --variant " +
                     std::string(variant_name(variant)) + " runs one batch per step: drop it or change --variant");
  if (table.given(cfg.options, &DdpSettings::bucket_mb) &&
      (variant == DdpVariant::naive || variant == DdpVariant::flat))
    throw UsageError("--bucket-mb sizes the buckets of --variant bucketed and accumulate; --variant " +
                     std::string(variant_name(variant)) + " has none: drop it or change --variant");
  if (accumulates && (s.batch / P) % s.micro != 0)  // (--variant all used to run accumulate with 1, silently)
    throw UsageError("each rank's batch (" + std::to_string(s.batch / P) + ") must divide into --micro-batches " +
                     std::to_string(s.micro) +
                     " for the accumulate variant; change --micro-batches, --batch or --ranks");
  // On thread ranks every rank, rank 0's 1-rank reference and the data share this process:
  // refuse before allocating anything, saying how much (not the out-of-memory killer).
  require_checkpoint_options(table, cfg.options, s, variant != DdpVariant::all, "give one --variant (not all)");
  require_memory(ddp_process_bytes(s, P), "--width, --depth, --batch or --steps (or --ranks)");
  return s;
}

}  // namespace

double ddp_rank_bytes(const DdpSettings& s, int rows) {
  const double psi = double(parameter_count(s.shape));
  return mlp_memory(s.shape, s.precision, rows).total() + adamw_state_bytes(std::size_t(psi), s.precision) +
         DeviceBatch::bytes(s.shape.in, s.shape.out, rows);
}

double ddp_process_bytes(const DdpSettings& s, int P) {
  const int rows = s.batch / P;
  const double psi = double(parameter_count(s.shape));
  // Host copies the checks make: weights and gradients as fp32, and rank 0's copy of the weights.
  const double checks = 3 * 4.0 * psi;
  const double per_rank = ddp_rank_bytes(s, rows) + checks + 4.0 * rows * s.shape.out;
  const double reference = ddp_rank_bytes(s, s.batch) + checks + 4.0 * s.batch * s.shape.out;
  const double data = 4.0 * double(s.batch) * s.train_steps() * (s.shape.in + s.shape.out) +
                      mlp_memory(s.shape, DType::f32, kTeacherChunk).total();  // the teacher, chunk by chunk
  return P * per_rank + reference + data;
}

namespace {

// This rank's collectives on its comm stream since `mark`: their time, their bytes, and
// when the last one ended (0: none). The comm stream stamps them when the data has moved,
// which a rank thread waiting for them may only see later (it shares the cores).
struct CommSince {
  double seconds = 0, bytes = 0, last_end = 0;
};
std::size_t comm_mark(Comm& comm) { return comm.trace()->log(comm.global_rank(), kStreamComm).size(); }
CommSince comm_since(Comm& comm, std::size_t mark) {
  const EventLog& log = comm.trace()->log(comm.global_rank(), kStreamComm);
  CommSince c;
  for (std::size_t i = mark; i < log.size(); ++i)
    if (log[i].kind == EventKind::collective && log[i].bytes > 0) {
      c.seconds += double(log[i].end_ns - log[i].begin_ns) * 1e-9;
      c.bytes += double(log[i].bytes);
      c.last_end = std::max(c.last_end, double(log[i].end_ns) * 1e-9);
    }
  return c;
}

// What one rank trains with in one variant.
struct Trainer {
  Mlp& model;
  AdamW& opt;
  LossScaler& scaler;
  BucketedAllReduce& reducer;  // the bucketed variants' (labs/train/buckets.h)
  DeviceBatch& batch;          // the micro-batch's rows on the model's device
};

// Forward and backward of `micro` micro-batches; bucketed variants launch a bucket's
// all-reduce the moment its last layer's gradients are ready (an after_backward hook), on
// the micro-batch that synchronizes. Returns the mean loss.
float forward_backward(StepClock& clock, Trainer& tr, const Dataset& data, int first_row, int rows, int micro,
                       bool bucketed) {
  const int mrows = rows / micro;
  float loss = 0;
  for (int mb = 0; mb < micro; ++mb) {
    tr.batch.load(data, first_row + mb * mrows, mrows);
    const float* y =
        clock.compute(Pass::forward, {}, [&](const LayerHooks& h) { return tr.model.forward(tr.batch.x(), mrows, h); });
    // Mean over the rank's rows, times the loss scale (f16; 1 otherwise).
    loss += tr.batch.mse_loss(tr.model.ops(), y, tr.scaler.scale() / float(micro)) / float(micro);
    const bool sync = bucketed && ex::sync_this_micro_batch(mb, micro);  // no_sync on the others
    const LayerHooks launch = sync ? tr.reducer.launch_hooks() : LayerHooks{};
    clock.compute(Pass::backward, launch, [&](const LayerHooks& h) { tr.model.backward(tr.batch.dy(), mb > 0, h); });
  }
  return loss;
}

// A step's timing: compute is forward and backward (to the last layer's gradients) and the
// optimizer; the wait, from there to the last collective's end (`comm_done`).
StepTiming step_timing(const StepClock& clock, const CommSince& c, double comm_done, double optimizer) {
  const double backward = clock.backward_end() - clock.start();
  return {backward + optimizer, std::max(0.0, comm_done - clock.backward_end()), clock.elapsed(), c.seconds};
}

// One training step of `variant` on this rank's rows: its timing and the gradient bytes
// its collectives moved. Returns the mean loss of the rows.
float train_step(Comm& comm, const LabConfig& cfg, Trainer& tr, const Dataset& data, int first_row, int rows,
                 DdpVariant variant, const DdpSettings& s, int step, StepTiming& t, double& grad_bytes,
                 std::vector<float>* gradients) {
  StepClock clock(comm, cfg, tr.model.shape().layers, step);
  const std::size_t mark = comm_mark(comm);
  const bool bucketed = variant == DdpVariant::bucketed || variant == DdpVariant::accumulate;
  const int micro = variant == DdpVariant::accumulate ? s.micro : 1;
  const float loss = forward_backward(clock, tr, data, first_row, rows, micro, bucketed);
  const ex::GradBuffer grads{tr.model.grad_data(), tr.model.precision()};
  if (variant == DdpVariant::naive) {  // one tensor at a time, nothing overlapped
    for (const ParamTensor& p : tr.model.layout().tensors())
      ex::average_gradients(comm, {grads.at(p.range.begin), grads.dtype}, p.range.size());
  } else if (variant == DdpVariant::flat) {
    ex::average_gradients(comm, grads, tr.model.num_params());
  }
  tr.reducer.wait();
  const CommSince c = comm_since(comm, mark);
  const double comm_done = c.last_end > 0 ? c.last_end : clock.now();
  if (gradients) *gradients = unscaled_gradients(tr.model, tr.scaler.scale());  // for the check
  // Every rank holds the same averaged gradients, so all skip an overflow together.
  const double optimizer = clock.compute(
      Pass::optimizer, [&] { tr.scaler.update(tr.opt.step(whole_model(tr.model), 1.0f / tr.scaler.scale())); });
  t = step_timing(clock, c, comm_done, optimizer);
  grad_bytes = c.bytes;
  return loss;
}

// Rank 0 trains the same model alone on the whole global batch, step for step, on its device.
OneRankReference single_rank_reference(Comm& comm, const LabConfig& cfg, const Dataset& data, const DdpSettings& s) {
  const auto progress = [&](int step) {
    report_progress(comm, cfg,
                    "1-rank reference: step " + std::to_string(step + 1) + " of " + std::to_string(s.train_steps()));
  };
  MlpReferenceRun run = train_mlp_reference(
      {s.shape, s.precision, MasterWeights::keep, s.adamw, s.batch, s.train_steps(), rank_device(cfg.device, comm)},
      data, progress);
  OneRankReference ref;
  ref.weights = std::move(run.weights);
  ref.first_gradients = std::move(run.first_gradients);
  ref.step_seconds = repeated(run_means(run.step_seconds, s.steps));
  return ref;
}

// Trains one variant for s.train_steps() steps on this rank: the losses, the gradients of
// the first step, the gradient bytes per step and the timings of the timed steps.
struct VariantRun {
  float first_loss = 0, last_loss = 0;
  CheckpointStats checkpoints;
  std::vector<float> first_gradients;
  double grad_bytes_per_step = 0;
  std::vector<StepTiming> timed;
};

// The step to start from: 0, or --resume's, its weights and AdamW state loaded (every rank reads all).
int resume(Comm& comm, const DdpSettings& s, Trainer& tr, CheckpointStats& stats) {
  return resume_run(comm, s.resume, mlp_resume_rules(s.batch, s.train_steps()), stats, [&](const Manifest& m) {
    const bool has_master = s.precision != DType::f32;  // (the DDP lab's AdamW keeps one)
    require_mlp_tensors(m, s.precision, tr.model.num_params(), has_master);
    return load_mlp_range(m, {0, tr.model.num_params()}, tr.model.param_data(), s.precision, tr.opt, has_master);
  });
}

VariantRun train_variant(Comm& comm, const LabConfig& cfg, DdpVariant variant, const DdpSettings& s,
                         const Dataset& data, Trainer& tr) {
  const int rows = s.batch / comm.size(), total = s.train_steps();
  const std::string name = variant_name(variant);
  VariantRun run;
  const int first = resume(comm, s, tr, run.checkpoints);
  comm.barrier();
  for (int step = first; step < total; ++step) {  // step 0 touches every buffer first: a warm-up, not timed
    report_progress(comm, cfg, name + ": step " + std::to_string(step + 1) + " of " + std::to_string(total));
    StepTiming t;
    double bytes = 0;
    float loss = train_step(comm, cfg, tr, data, step * s.batch + comm.rank() * rows, rows, variant, s, step, t, bytes,
                            step == 0 ? &run.first_gradients : nullptr);
    if (step > 0) run.timed.push_back(t);
    run.grad_bytes_per_step += bytes;                             // summed whole (exact), divided at the end
    comm.all_reduce(&loss, &loss, 1, DType::f32, ReduceOp::avg);  // the loss of the global batch
    (step == 0 ? run.first_loss : run.last_loss) = loss;
    const TrainPosition pos{step + 1, std::uint64_t(step + 1) * std::uint64_t(s.batch), kMlpDataSeed, "ddp"};
    checkpoint_if_due(comm, checkpoint_plan(s), pos, run.checkpoints, [&] {
      const Range mine = shard_of(tr.model.num_params(), comm.rank(), comm.size()).range;  // 1/N of the replicas
      const void* at = static_cast<const std::byte*>(tr.model.param_data()) + mine.begin * dtype_size(s.precision);
      return stage_mlp_pieces({{mine, at, &tr.opt, mine.begin}}, s.precision, tr.model.num_params());
    });
  }
  finish_checkpoints(comm, run.checkpoints);
  run.grad_bytes_per_step /= total - first;
  return run;
}

void run_variant(Comm& comm, const LabConfig& cfg, DdpVariant variant, const DdpSettings& s, const Dataset& data,
                 const OneRankReference& reference, Report& rep) {
  MemoryTracker mem(comm.global_rank(), comm.trace());
  Mlp model(s.shape, mem, 1, s.precision, rank_device(cfg.device, comm));
  AdamW opt(whole_model(model), model.device(), mem, s.adamw);
  LossScaler scaler(s.precision);
  BucketedAllReduce reducer(comm, model, s.bucket_mb);
  const int micro_rows = s.batch / comm.size() / (variant == DdpVariant::accumulate ? s.micro : 1);
  DeviceBatch batch(mem, model.device(), s.shape.in, s.shape.out, micro_rows);
  Trainer tr{model, opt, scaler, reducer, batch};
  VariantRun run;
  {  // the variant's training is a phase: the timeline labels it and opens on one of its steps
    ScopedSpan phase(comm.trace(), comm.global_rank(), EventKind::phase,
                     comm.trace()->label(variant_name(variant), {.part = RunPart::timed}));
    run = train_variant(comm, cfg, variant, s, data, tr);
  }
  DdpMeasurement m;
  m.device_vs_tracker = device_vs_tracker_bytes(comm, mem, model.device());
  m.first_loss = run.first_loss;
  m.last_loss = run.last_loss;
  m.time = combine_timings(comm, run.timed, s.steps);
  m.grad_bytes_per_step = run.grad_bytes_per_step;
  m.checkpoints = run.checkpoints;
  measure_variant(comm, m, fp32_weights(model, opt), run.first_gradients, reference);
  m.params = model.num_params();
  m.buckets = variant == DdpVariant::bucketed || variant == DdpVariant::accumulate ? reducer.bucket_count() : 0;
  m.left_after_wait = reducer.left_after_wait();
  m.skipped_steps = scaler.skipped_steps();
  m.param_peak = mem.peak(MemTag::param);
  m.grad_peak = mem.peak(MemTag::grad);
  m.optimizer_peak = mem.peak(MemTag::optimizer) + mem.peak(MemTag::master);
  m.workspace_peak = mem.peak(MemTag::other);
  m.activation_peak = mem.peak(MemTag::activation);
  m.total_peak = mem.peak_total();
  const int rows = s.batch / comm.size();
  m.total_estimate = ddp_rank_bytes(s, variant == DdpVariant::accumulate ? rows / s.micro : rows);
  add_ddp_rows(rep, variant, s, m, reference, comm.size());
}

}  // namespace

const EnumNames<DdpVariant> kVariantNames = {{DdpVariant::naive, "naive"},
                                             {DdpVariant::flat, "flat"},
                                             {DdpVariant::bucketed, "bucketed"},
                                             {DdpVariant::accumulate, "accumulate"},
                                             {DdpVariant::all, "all"}};

const char* variant_name(DdpVariant v) { return name_of(kVariantNames, v); }

std::vector<DdpVariant> variants_of(const DdpSettings& s) {
  if (s.variant != DdpVariant::all) return {s.variant};
  return {DdpVariant::naive, DdpVariant::flat, DdpVariant::bucketed, DdpVariant::accumulate};
}

Report run_ddp_lab(Comm& comm, const LabConfig& cfg) {
  if (!comm.trace()) throw Error("the DDP lab measures from trace events; run it with tracing on");
  kernels::use_one_blas_thread();
  const DdpSettings s = settings_of(cfg, comm.size());
  const Dataset data = make_teacher_data(s.shape, s.batch * s.train_steps(), 7);
  const std::vector<DdpVariant> variants = variants_of(s);
  Report rep = start_report(comm, cfg, "ddp");
  describe_ddp_setup(rep, s, variants, cfg, parameter_count(s.shape));
  if (comm.rank() == 0) {  // the memory view's formula line: every rank holds the whole model state
    const double psi = double(parameter_count(s.shape));
    comm.trace()->set_meta(MetaKey::predicted_bytes_per_rank, std::to_string(16.0 * psi));
    comm.trace()->set_meta(MetaKey::predicted_bytes_formula,
                           "16 B/param x " + std::to_string(std::size_t(psi)) + " params");
  }
  OneRankReference reference;
  if (comm.rank() == 0) {  // (the other ranks wait meanwhile: a long barrier on their timelines)
    ScopedSpan span(comm.trace(), comm.global_rank(), EventKind::phase,
                    comm.trace()->label(kReferencePhaseLabel, kReferenceRole));
    reference = single_rank_reference(comm, cfg, data, s);
  }
  for (const DdpVariant v : variants) run_variant(comm, cfg, v, s, data, reference, rep);
  rep.add("one_rank_step_time", "step time of 1 rank on the global batch", 0, "s").over(reference.step_seconds);
  if (variants.size() > 1) {  // the point of bucketing: how much of naive's exposed time is left
    for (const DdpVariant v : variants) rep.columns.push_back(variant_name(v));
    const ReportRow* naive = rep.find("naive.exposed_comm_per_step");
    const ReportRow* bucketed = rep.find("bucketed.exposed_comm_per_step");
    if (naive && bucketed && naive->measured > 0)
      rep.add("bucketed_vs_naive_exposed", "exposed: bucketed / naive", bucketed->measured / naive->measured, "");
  }
  return rep;
}

const OptionTable<DdpSettings>& ddp_option_table() {
  static const OptionTable<DdpSettings> table = [] {
    OptionTable<DdpSettings> t;
    t.choice("variant", &DdpSettings::variant, DdpVariant::bucketed, kVariantNames, "how gradients are averaged")
        .number("bucket-mb", &DdpSettings::bucket_mb, 25.0, 1e-6, 1 << 20,
                "bucket capacity in MiB (PyTorch DDP's default is 25)");
    add_mlp_rows(t, {.width = 256, .depth = 4, .batch = 64, .steps = 5});
    t.integer("micro-batches", &DdpSettings::micro, 4, 1, 1 << 16, "micro-batches per step for --variant accumulate")
        .choice("precision", &DdpSettings::precision, DType::f32, kPrecisionNames,
                "fp32, or mixed precision: bf16/fp16 weights and gradients, fp32 master, m, v");
    add_checkpoint_rows(t);
    return t;
  }();
  return table;
}

namespace ex {
std::span<const ExerciseHints> ddp_hints();  // exercises/ddp_hints.cpp
}  // namespace ex

LabInfo ddp_lab_info() {
  return {
      "ddp",
      "data parallelism: naive, flat, bucketed + overlapped with backward, gradient accumulation; vs 1 rank",
      {RunOption::slow_rank, RunOption::faults, RunOption::repeat, RunOption::device, RunOption::step},
      ddp_option_table().specs(),
      {{"assign_buckets", "AssignBuckets", 10},
       {"launch_ready_buckets", "LaunchReadyBuckets", 10},
       {"wait_for_buckets", "WaitForBuckets", 5},
       {"average_gradients", "AverageGradients", 5},
       {"sync_this_micro_batch", "SyncThisMicroBatch", 5}},
      run_ddp_lab,
      nullptr,
      StepUnit::collectives,  // DDP posts no sends: faults count its all-reduces
      /*overlaps_compute=*/true,
      {ViewKind::timeline, ViewKind::memory, ViewKind::report, ViewKind::what_if},
      {{"bucket-mb", "0.25"}, {"batch", "256"}},  // live in dtlab-viz: 3 buckets, not 1; layers long enough to see
      ddp_option_table().settings_text(),
      ex::ddp_hints(),
      [](const LabConfig& c) { settings_of(c, c.ranks); },
      // small_run: the tests start from it (lab.h)
      {{"ranks", "2"}, {"width", "32"}, {"depth", "3"}, {"batch", "8"}, {"steps", "2"}, {"repeat", "1"}},
  };
}

}  // namespace dtl
