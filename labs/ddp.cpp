// The DDP lab: data parallelism four ways, on the same MLP and data.
//
//   dtlab run ddp --variant naive|flat|bucketed|accumulate|all --ranks 4 [--bucket-mb 25] [--link pcie4]
//
// naive       after backward, one all-reduce per parameter tensor, one after another
// flat        after backward, one all-reduce of the whole gradient buffer
// bucketed    PyTorch DDP: gradients grouped into buckets in reverse layer order; each
//             bucket's async all-reduce starts the moment its last gradient is ready during
//             backward, so communication overlaps the rest of backward; wait before the step
// accumulate  k micro-batches per step; the first k-1 skip communication (no_sync) and
//             only the last one reduces, bucketed
//
// Every rank holds the full model and 1/P of the global batch; averaged gradients make N
// ranks equal one rank on the global batch, which rank 0 checks against a single-process
// reference. Memory is tagged so the report holds 16 bytes/parameter (fp32 weights, grads,
// AdamW m and v) against what was allocated.
#include "labs/ddp.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "exercises/ddp.h"
#include "kernels/cpu/kernels.h"
#include "labs/compute_span.h"
#include "labs/measure.h"
#include "labs/model.h"
#include "labs/optimizer.h"

namespace dtl {

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Settings {
  MlpShape shape;
  int batch = 64, steps = 5, micro = 4;
  double bucket_mb = 25;
  DType precision = DType::f32;  // f32, or bf16/f16 for mixed precision
  kernels::AdamWConfig adamw{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
};

// A numeric lab option, or a UsageError naming it (never a bare "stoi" from deep inside).
double number_option(const LabConfig& cfg, const std::string& name, double most) {
  const std::string& text = cfg.option(name);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > most)
    throw UsageError("--" + name + " '" + text + "' must be a positive number, at most " + std::to_string(long(most)));
  return v;
}

int int_option(const LabConfig& cfg, const std::string& name, int most) {
  const double v = number_option(cfg, name, most);
  if (v != std::floor(v)) throw UsageError("--" + name + " must be a whole number, got " + cfg.option(name));
  return int(v);
}

Settings settings_of(const LabConfig& cfg, int P) {
  Settings s;
  s.shape.width = int_option(cfg, "width", 1 << 16);
  s.shape.layers = int_option(cfg, "depth", 1024);
  s.batch = int_option(cfg, "batch", 1 << 24);
  s.steps = int_option(cfg, "steps", 1 << 20);
  s.micro = int_option(cfg, "micro-batches", 1 << 16);
  s.bucket_mb = number_option(cfg, "bucket-mb", 1 << 20);
  const std::string& p = cfg.option("precision");
  s.precision = p == "bf16" ? DType::bf16 : p == "fp16" ? DType::f16 : DType::f32;
  // Every rank holds the model, its gradients and AdamW's state (16 B/parameter), plus the
  // 1-rank reference on rank 0: on thread ranks all of it in this one process.
  const double params = double(s.shape.width) * s.shape.width * s.shape.layers;
  require_memory((P + 1) * (16.0 * params + 8.0 * double(s.batch) * s.shape.width * s.shape.layers),
                 "--width, --depth or --batch (or --ranks)");
  if (s.batch % P != 0) throw UsageError("--batch " + std::to_string(s.batch) + " must divide evenly over " + std::to_string(P) + " ranks");
  if (cfg.option("variant") == "accumulate" && (s.batch / P) % s.micro != 0)
    throw UsageError("each rank's batch (" + std::to_string(s.batch / P) + ") must divide into --micro-batches " + std::to_string(s.micro));
  return s;
}

// Buckets in the exercise's rule (exercises/ddp.h): reverse layer order, whole layers,
// closed at the capacity (DDP's default 25 MiB).
std::vector<ex::GradBucket> make_buckets(const std::vector<LayerView>& layers, double capacity_mb, DType t) {
  std::vector<std::size_t> elements;
  for (const LayerView& l : layers) elements.push_back(l.end() - l.w_offset);
  return ex::assign_buckets(elements, std::size_t(capacity_mb * (1 << 20) / double(dtype_size(t))));
}

// How far N ranks' weights may be from one rank's after the run. fp32: a few ulps.
// Mixed precision: each rank rounds its own partial gradient to 16 bits and the sum is
// rounded again, so gradients differ from one rank's by about a 16-bit ulp (2^-8 relative
// for bf16). AdamW divides by sqrt(v), so where a gradient is near 0 that small difference
// can flip the update's sign: up to 2·lr per step on such weights.
double weight_tolerance(const Settings& s) {
  return s.precision == DType::f32 ? 1e-5 : 2.0 * double(s.adamw.lr) * s.steps;
}

struct StepTimes {
  double compute = 0, step = 0;
  std::vector<double> exposed;  // per step: from the end of backward to the optimizer
};

// One training step of `variant` on this rank's rows. Returns the mean loss of the rows.
float train_step(Comm& comm, const LabConfig& cfg, Mlp& model, AdamW& opt, const Dataset& data, int first_row, int rows,
                 const std::string& variant, const Settings& s, int step, const std::vector<ex::GradBucket>& buckets,
                 StepTimes& t, std::vector<float>* gradients_after_comm) {
  const int out = s.shape.out;
  const int micro = variant == "accumulate" ? s.micro : 1;
  const int mrows = rows / micro;
  std::vector<float> dy(std::size_t(mrows) * std::size_t(out));
  std::vector<Request> pending;
  const ex::GradBuffer grads{model.grad_data(), model.precision()};
  float loss = 0;
  // Compute spans on the main stream: the timeline shows backward overlapping the buckets.
  const auto t0 = Clock::now();
  for (int mb = 0; mb < micro; ++mb) {
    const int r0 = first_row + mb * mrows;
    const float* y = nullptr;
    {
      ComputeSpan span(comm, cfg, "forward", step);
      y = model.forward(data.x_row(r0), mrows);
    }
    loss += kernels::mse_loss(y, data.y_row(r0), dy.data(), dy.size()) / float(micro);
    // Mean over the rank's rows, times the loss scale (f16; 1 otherwise).
    kernels::scale(opt.loss_scale() / float(micro), dy.data(), dy.size());
    // no_sync: only the micro-batch that may synchronize launches buckets during its backward.
    const bool overlap = ex::sync_this_micro_batch(mb, micro) && (variant == "bucketed" || variant == "accumulate");
    ComputeSpan span(comm, cfg, "backward", step);
    model.backward(dy.data(), mb > 0, overlap ? std::function<void(int)>([&](int layer) {
      span.pace();  // a straggler's gradients are late layer by layer
      ex::launch_ready_buckets(comm, grads, buckets, layer, pending);
    }) : std::function<void(int)>{});
  }
  const auto t_backward = Clock::now();
  if (variant == "naive") {
    for (const LayerView& l : model.layers()) {  // one tensor at a time, nothing overlapped
      ex::average_gradients(comm, {grads.at(l.w_offset), grads.dtype}, l.w_count());
      ex::average_gradients(comm, {grads.at(l.b_offset), grads.dtype}, std::size_t(l.out));
    }
  } else if (variant == "flat") {
    ex::average_gradients(comm, grads, model.num_params());
  }
  ex::wait_for_buckets(pending);
  const auto t_comm = Clock::now();
  if (gradients_after_comm) *gradients_after_comm = opt.unscaled_gradients();  // for the check
  {
    ComputeSpan span(comm, cfg, "optimizer", step);
    opt.step();  // every rank holds the same averaged gradients, so all skip an overflow together
  }
  const auto t_end = Clock::now();
  t.compute += seconds(t0, t_backward) + seconds(t_comm, t_end);
  t.step += seconds(t0, t_end);
  t.exposed.push_back(seconds(t_backward, t_comm));
  return loss;
}

// Rank 0's reference: the same model trained by one process on the whole global batch,
// once per run (every variant must end on its weights). Also times its steps (after the
// first): the 1-GPU baseline a speedup is measured against.
struct OneRankReference {
  std::vector<float> weights;         // after the last step, fp32 (mixed precision: the master)
  std::vector<float> first_gradients;  // of the first step, loss scale divided out
  double step_seconds = 0;
};

OneRankReference single_rank_reference(const Dataset& data, const Settings& s) {
  MemoryTracker mem(0, nullptr);
  Mlp model(s.shape, mem, 1, s.precision);
  AdamW opt(model, mem, s.adamw);
  std::vector<float> dy(std::size_t(s.batch) * std::size_t(s.shape.out));
  OneRankReference ref;
  const int warmup = s.steps > 1 ? 1 : 0;
  Clock::time_point timed_from = Clock::now();
  for (int step = 0; step < s.steps; ++step) {
    if (step == warmup) timed_from = Clock::now();
    const int r0 = step * s.batch;
    const float* y = model.forward(data.x_row(r0), s.batch);
    kernels::mse_loss(y, data.y_row(r0), dy.data(), dy.size());
    kernels::scale(opt.loss_scale(), dy.data(), dy.size());
    model.backward(dy.data(), false);
    if (step == 0) ref.first_gradients = opt.unscaled_gradients();
    opt.step();
  }
  ref.step_seconds = seconds(timed_from, Clock::now()) / (s.steps - warmup);
  ref.weights.assign(opt.weights(), opt.weights() + model.num_params());
  return ref;
}

// The communication time of this rank's collectives (comm-stream events since `mark`);
// their bytes are added to *bytes when it is given.
double collective_seconds(Comm& comm, std::size_t mark, double* bytes = nullptr) {
  const EventLog& log = comm.trace()->log(comm.global_rank(), kStreamComm);
  double s = 0;
  for (std::size_t i = mark; i < log.size(); ++i)
    if (log[i].kind == EventKind::collective && log[i].bytes > 0) {
      s += double(log[i].end_ns - log[i].begin_ns) * 1e-9;
      if (bytes) *bytes += double(log[i].bytes);
    }
  return s;
}

void run_variant(Comm& comm, const LabConfig& cfg, const std::string& variant, const Settings& s, const Dataset& data,
                 const OneRankReference& reference, Report& rep) {
  const int P = comm.size(), r = comm.rank();
  MemoryTracker mem(comm.global_rank(), comm.trace());
  Mlp model(s.shape, mem, 1, s.precision);
  AdamW opt(model, mem, s.adamw);
  const std::vector<ex::GradBucket> buckets = make_buckets(model.layers(), s.bucket_mb, s.precision);
  const int rows = s.batch / P;
  const std::size_t comm_mark = comm.trace()->log(comm.global_rank(), kStreamComm).size();
  comm.barrier();
  // The first step touches every buffer for the first time (page faults, allocator): a
  // warm-up, left out of the times when there is more than one step.
  const int warmup = s.steps > 1 ? 1 : 0, timed = s.steps - warmup;
  StepTimes t, warmup_times;
  std::size_t timed_mark = comm_mark;
  std::vector<float> first_gradients;
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < s.steps; ++step) {
    if (step == warmup) timed_mark = comm.trace()->log(comm.global_rank(), kStreamComm).size();
    const float loss = train_step(comm, cfg, model, opt, data, step * s.batch + r * rows, rows, variant, s, step, buckets,
                                  step < warmup ? warmup_times : t, step == 0 ? &first_gradients : nullptr);
    float global = loss;
    comm.all_reduce(&global, &global, 1, DType::f32, ReduceOp::avg);  // the loss of the global batch
    (step == 0 ? first_loss : last_loss) = global;
    if (s.steps == 1) last_loss = global;
  }
  double reduced_bytes = 0;
  collective_seconds(comm, comm_mark, &reduced_bytes);
  const double comm_s = collective_seconds(comm, timed_mark);
  const double loss_bytes = 4.0 * s.steps;  // the loss all-reduces are reporting, not DDP
  // Every rank must hold the same weights, and they must equal one rank on the global batch.
  // (In mixed precision: the fp32 master weights.)
  const float* mine = opt.weights();
  std::vector<float> rank0(mine, mine + model.num_params());
  comm.broadcast(rank0.data(), rank0.size(), DType::f32, 0);
  double between = 0, vs_single = 0;
  for (std::size_t i = 0; i < rank0.size(); ++i) between = std::max(between, double(std::fabs(rank0[i] - mine[i])));
  if (r == 0 && (reference.weights.size() != rank0.size() || reference.first_gradients.size() != rank0.size()))
    throw Error("rank 0 reports, so it must hold the 1-rank reference (" + std::to_string(reference.weights.size()) +
                " weights for a model of " + std::to_string(rank0.size()) + ")");
  for (std::size_t i = 0; i < reference.weights.size(); ++i)
    vs_single = std::max(vs_single, double(std::fabs(reference.weights[i] - mine[i])));
  // The averaged gradients of the first step against one rank's on the whole batch,
  // relative to their largest magnitude. Unlike the weights, they are not hidden by
  // AdamW's invariance to the gradient's scale (a missing 1/P changes no update much).
  double grad_diff = 0, grad_scale = 1e-30;
  for (std::size_t i = 0; i < reference.first_gradients.size(); ++i) {
    grad_diff = std::max(grad_diff, double(std::fabs(reference.first_gradients[i] - first_gradients[i])));
    grad_scale = std::max(grad_scale, double(std::fabs(reference.first_gradients[i])));
  }
  // Per step, the rank that finishes backward last waits only for the communication; the
  // others also wait for it. So exposed communication is the smallest wait over ranks, and
  // the rest of the largest wait is load imbalance (a straggler, or unfair CPU sharing).
  std::vector<double> least = t.exposed, most_wait = t.exposed;
  comm.all_reduce(least.data(), least.data(), least.size(), DType::f64, ReduceOp::min);
  comm.all_reduce(most_wait.data(), most_wait.data(), most_wait.size(), DType::f64, ReduceOp::max);
  double exposed = 0, imbalance = 0;
  for (std::size_t i = 0; i < least.size(); ++i) {
    exposed += least[i] / timed;
    imbalance += (most_wait[i] - least[i]) / timed;
  }
  const double compute = max_over_ranks(comm, t.compute) / timed, step_time = max_over_ranks(comm, t.step) / timed;
  const double comm_per_step = max_over_ranks(comm, comm_s) / timed;
  between = max_over_ranks(comm, between);

  const std::string n = variant + ": ";
  const double psi = double(model.num_params());
  rep.add(n + "loss, first step", first_loss, std::nullopt, "");
  rep.add(n + "loss, last step", last_loss, std::nullopt, "");
  // fp32: sums in another order than the single process, a few ulps per step; AdamW keeps
  // them small. Mixed precision: see weight_tolerance.
  rep.check(n + "max weight diff vs 1 rank", vs_single, 0.0, "", weight_tolerance(s));
  rep.check(n + "max weight diff between ranks", between, 0.0, "");
  // fp32: summation order, ~1e-7. 16 bits: each rank's gradient and their sum are rounded
  // to 8 (bf16) or 11 (f16) significant bits; 2^-6 of the largest still catches any
  // averaging mistake (a missing 1/P is off by P-1 times the value).
  rep.check(n + "max step-1 gradient diff vs 1 rank (relative)", grad_diff / grad_scale, 0.0, "",
            s.precision == DType::f32 ? 1e-5 : 1.0 / 64);
  rep.add(n + "compute per step (slowest rank)", compute, std::nullopt, "s");
  rep.add(n + "communication per step (all-reduce time)", comm_per_step, std::nullopt, "s");
  rep.add(n + "exposed communication per step", exposed, std::nullopt, "s");
  rep.add(n + "waiting for slower ranks per step", imbalance, std::nullopt, "s");
  rep.add(n + "efficiency compute/(compute+exposed)", compute / (compute + exposed), std::nullopt, "");
  rep.add(n + "step time (slowest rank)", step_time, std::nullopt, "s");
  rep.add(n + "step time of 1 rank on the global batch", reference.step_seconds, std::nullopt, "s");
  // Ideal: P. Below 1, the model is too small for this link: 1 rank is faster.
  rep.add(n + "speedup over 1 rank", reference.step_seconds / step_time, double(P), "x");
  const double grad_bytes = (reduced_bytes - loss_bytes) / s.steps;
  const double esize = double(dtype_size(s.precision));  // 4, or 2 in mixed precision
  rep.check(n + "gradient bytes all-reduced per rank per step", grad_bytes, esize * psi, "B");
  // What a ring all-reduce of those bytes puts on each rank's link (the library's own
  // wire is not observed here; the collectives lab measures the ring's bytes from events).
  rep.add(n + "ring wire bytes per rank per step, 2(P-1)/P x all-reduced", 2.0 * (P - 1) / P * grad_bytes,
          2.0 * (P - 1) / P * esize * psi, "B");
  const std::string e = std::to_string(int(esize)), o = s.precision == DType::f32 ? "8/param: m, v" : "12/param: master, m, v";
  rep.check(n + "param bytes per rank (" + e + "/param)", double(mem.peak(MemTag::param)), esize * psi, "B");
  rep.check(n + "grad bytes per rank (" + e + "/param)", double(mem.peak(MemTag::grad)), esize * psi, "B");
  rep.check(n + "optimizer bytes per rank (" + o + ")", double(mem.peak(MemTag::optimizer)), (16 - 2 * esize) * psi, "B");
  if (s.precision == DType::f16)
    rep.add(n + "steps skipped (f16 gradients overflowed; loss scale halved)", opt.skipped_steps(), std::nullopt, "");
  rep.add(n + "model state bytes per parameter", double(mem.peak(MemTag::param) + mem.peak(MemTag::grad) +
                                                        mem.peak(MemTag::optimizer)) / psi, 16.0, "B/param");
  rep.add(n + "workspace bytes per rank (peak)", double(mem.peak(MemTag::other)), std::nullopt, "B");
  rep.add(n + "activation bytes per rank (peak)", double(mem.peak(MemTag::activation)), std::nullopt, "B");
  if (variant == "bucketed" || variant == "accumulate") rep.add(n + "buckets", double(buckets.size()), std::nullopt, "");
}

}  // namespace

Report run_ddp_lab(Comm& comm, const LabConfig& cfg) {
  if (!comm.trace()) throw Error("the DDP lab measures from trace events; run it with tracing on");
  kernels::use_one_blas_thread();
  const Settings s = settings_of(cfg, comm.size());
  const Dataset data = make_teacher_data(s.shape, s.batch * s.steps, 7);
  Report rep;
  rep.lab = "ddp";
  rep.backend = comm.backend_name();
  rep.ranks = comm.size();
  rep.config = cfg.to_json();
  if (cfg.slow_rank >= 0)  // a straggler: the others wait for it ("waiting for slower ranks")
    rep.add("straggler: rank " + std::to_string(cfg.slow_rank) + " compute slowed by", cfg.slow_factor, std::nullopt, "x");
  const std::string variant = cfg.option("variant");
  const std::vector<std::string> variants =
      variant == "all" ? std::vector<std::string>{"naive", "flat", "bucketed", "accumulate"} : std::vector<std::string>{variant};
  OneRankReference reference;
  if (comm.rank() == 0) {  // (the other ranks wait meanwhile: a long barrier on their timelines)
    ScopedSpan span(comm.trace(), comm.global_rank(), EventKind::phase, comm.trace()->label("1-rank reference"));
    reference = single_rank_reference(data, s);
  }
  for (const auto& v : variants) {
    Settings vs = s;
    if (v == "accumulate" && (s.batch / comm.size()) % s.micro != 0) vs.micro = 1;
    run_variant(comm, cfg, v, vs, data, reference, rep);
  }
  if (variant == "all") {  // the point of bucketing: how much of naive's exposed time is left
    const ReportRow* naive = rep.find("naive: exposed communication per step");
    const ReportRow* bucketed = rep.find("bucketed: exposed communication per step");
    if (naive && bucketed && naive->measured > 0)
      rep.add("bucketed exposed / naive exposed", bucketed->measured / naive->measured, std::nullopt, "");
  }
  return rep;
}

}  // namespace dtl
