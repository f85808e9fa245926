// The DDP lab's measurements against one rank and its report rows (see ddp_lab.cpp).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "labs/ddp/ddp_lab.h"

namespace dtl {

void measure_variant(Comm& comm, DdpMeasurement& m, const std::vector<float>& weights, const std::vector<float>& first_grads,
                     const OneRankReference& reference, const std::vector<double>& exposed, int timed) {
  // Every rank must hold the same weights, and they must equal one rank on the global batch.
  std::vector<float> rank0 = weights;
  comm.broadcast(rank0.data(), rank0.size(), DType::f32, 0);
  double between = 0;
  for (std::size_t i = 0; i < rank0.size(); ++i) between = std::max(between, double(std::fabs(rank0[i] - weights[i])));
  if (comm.rank() == 0 && (reference.weights.size() != weights.size() || reference.first_gradients.size() != weights.size()))
    throw Error("rank 0 reports, so it must hold the 1-rank reference (" + std::to_string(reference.weights.size()) +
                " weights for a model of " + std::to_string(weights.size()) + ")");
  for (std::size_t i = 0; i < reference.weights.size(); ++i)
    m.max_vs_single = std::max(m.max_vs_single, double(std::fabs(reference.weights[i] - weights[i])));
  // The averaged gradients of the first step against one rank's on the whole batch,
  // relative to their largest magnitude. Unlike the weights, they are not hidden by
  // AdamW's invariance to the gradient's scale (a missing 1/P changes no update much).
  double grad_diff = 0, grad_scale = 1e-30;
  for (std::size_t i = 0; i < reference.first_gradients.size(); ++i) {
    grad_diff = std::max(grad_diff, double(std::fabs(reference.first_gradients[i] - first_grads[i])));
    grad_scale = std::max(grad_scale, double(std::fabs(reference.first_gradients[i])));
  }
  m.first_grad_rel_diff = grad_diff / grad_scale;
  // Per step, the rank that finishes backward last waits only for the communication; the
  // others also wait for it. So exposed communication is the smallest wait over ranks, and
  // the rest of the largest wait is load imbalance (a straggler, or unfair CPU sharing).
  std::vector<double> least = exposed, most_wait = exposed;
  comm.all_reduce(least.data(), least.data(), least.size(), DType::f64, ReduceOp::min);
  comm.all_reduce(most_wait.data(), most_wait.data(), most_wait.size(), DType::f64, ReduceOp::max);
  for (std::size_t i = 0; i < least.size(); ++i) {
    m.exposed += least[i] / timed;
    m.imbalance += (most_wait[i] - least[i]) / timed;
  }
  comm.all_reduce(&between, &between, 1, DType::f64, ReduceOp::max);
  m.max_between_ranks = between;
}

namespace {

// How far N ranks' weights may be from one rank's after the run. fp32: a few ulps.
// Mixed precision: each rank rounds its own partial gradient to 16 bits and the sum is
// rounded again, so gradients differ from one rank's by about a 16-bit ulp (2^-8 relative
// for bf16). AdamW divides by sqrt(v), so where a gradient is near 0 that small difference
// can flip the update's sign: up to 2·lr per step on such weights.
double weight_tolerance(const DdpSettings& s) {
  return s.precision == DType::f32 ? 1e-5 : 2.0 * double(s.adamw.lr) * s.steps;
}

void add_memory_rows(Report& rep, const std::string& n, const DdpSettings& s, const DdpMeasurement& m) {
  const double psi = double(m.params);
  const double esize = double(dtype_size(s.precision));  // 4, or 2 in mixed precision
  const std::string e = std::to_string(int(esize)), o = s.precision == DType::f32 ? "8/param: m, v" : "12/param: master, m, v";
  rep.check(n + "param bytes per rank (" + e + "/param)", double(m.param_peak), esize * psi, "B");
  rep.check(n + "grad bytes per rank (" + e + "/param)", double(m.grad_peak), esize * psi, "B");
  rep.check(n + "optimizer bytes per rank (" + o + ")", double(m.optimizer_peak), (16 - 2 * esize) * psi, "B");
  if (s.precision == DType::f16)
    rep.add(n + "steps skipped (f16 gradients overflowed; loss scale halved)", m.skipped_steps, std::nullopt, "");
  rep.add(n + "model state bytes per parameter", double(m.param_peak + m.grad_peak + m.optimizer_peak) / psi, 16.0,
          "B/param");
  rep.add(n + "workspace bytes per rank (peak)", double(m.workspace_peak), std::nullopt, "B");
  // The estimate the run was admitted with (ddp_rank_bytes), against what was allocated.
  rep.check(n + "memory per rank: measured peak vs estimate (within 10%)", double(m.total_peak), m.total_estimate, "B",
            0.1 * m.total_estimate);
  rep.add(n + "activation bytes per rank (peak)", double(m.activation_peak), std::nullopt, "B");
}

}  // namespace

void add_ddp_rows(Report& rep, DdpVariant v, const DdpSettings& s, const DdpMeasurement& m,
                  const OneRankReference& reference, int P) {
  const std::string n = std::string(variant_name(v)) + ": ";
  const double psi = double(m.params);
  rep.add(n + "loss, first step", m.first_loss, std::nullopt, "");
  rep.add(n + "loss, last step", m.last_loss, std::nullopt, "");
  // fp32: sums in another order than the single process, a few ulps per step; AdamW keeps
  // them small. Mixed precision: see weight_tolerance.
  rep.check(n + "max weight diff vs 1 rank", m.max_vs_single, 0.0, "", weight_tolerance(s));
  rep.check(n + "max weight diff between ranks", m.max_between_ranks, 0.0, "");
  // fp32: summation order; a sum of n rounded terms drifts like √n·2^-24, so the bound
  // grows with the batch (1e-5 up to ~6,000 rows). 16 bits: each rank's gradient and their
  // sum are rounded to 8 (bf16) or 11 (f16) significant bits; 2^-6 of the largest still
  // catches any averaging mistake (a missing 1/P is off by P-1 times the value).
  const double fp32_bound = std::max(1e-5, 8.0 * std::sqrt(double(s.batch)) * std::ldexp(1.0, -24));
  rep.check(n + "max step-1 gradient diff vs 1 rank (relative)", m.first_grad_rel_diff, 0.0, "",
            s.precision == DType::f32 ? fp32_bound : 1.0 / 64);
  rep.add(n + "compute per step (slowest rank)", m.compute, std::nullopt, "s");
  rep.add(n + "communication per step (all-reduce time)", m.comm, std::nullopt, "s");
  rep.add(n + "exposed communication per step", m.exposed, std::nullopt, "s");
  rep.add(n + "waiting for slower ranks per step", m.imbalance, std::nullopt, "s");
  rep.add(n + "efficiency compute/(compute+exposed)", m.compute / (m.compute + m.exposed), std::nullopt, "");
  rep.add(n + "step time (slowest rank)", m.step_time, std::nullopt, "s");
  rep.add(n + "step time of 1 rank on the global batch", reference.step_seconds, std::nullopt, "s");
  // Ideal: P. Below 1, the model is too small for this link: 1 rank is faster.
  rep.add(n + "speedup over 1 rank", reference.step_seconds / m.step_time, double(P), "x");
  const double esize = double(dtype_size(s.precision));
  rep.check(n + "gradient bytes all-reduced per rank per step", m.grad_bytes_per_step, esize * psi, "B");
  // What a ring all-reduce of those bytes puts on each rank's link (the library's own
  // wire is not observed here; the collectives lab measures the ring's bytes from events).
  rep.add(n + "ring wire bytes per rank per step, 2(P-1)/P x all-reduced", 2.0 * (P - 1) / P * m.grad_bytes_per_step,
          2.0 * (P - 1) / P * esize * psi, "B");
  add_memory_rows(rep, n, s, m);
  if (m.buckets > 0) rep.add(n + "buckets", double(m.buckets), std::nullopt, "");
}

LabInfo ddp_lab_info() {
  return {
      "ddp",
      "data parallelism: naive, flat, bucketed + overlapped with backward, gradient accumulation; vs 1 rank",
      {RunOption::slow_rank, RunOption::faults},
      {{"variant", OptionKind::choice, "bucketed", "how gradients are averaged",
        {"naive", "flat", "bucketed", "accumulate", "all"}},
       {"bucket-mb", OptionKind::number, "25", "bucket capacity in MiB (PyTorch DDP's default is 25)", {}, 1e-6, 1 << 20},
       {"width", OptionKind::integer, "256", "hidden width of the MLP", {}, 1, 1 << 16},
       {"depth", OptionKind::integer, "4", "linear layers of the MLP", {}, 1, 1024},
       {"batch", OptionKind::integer, "64", "global batch (split over ranks)", {}, 1, 1 << 24},
       {"steps", OptionKind::integer, "5", "training steps", {}, 1, 1 << 20},
       {"micro-batches", OptionKind::integer, "4", "micro-batches per step for --variant accumulate", {}, 1, 1 << 16},
       {"precision", OptionKind::choice, "fp32",
        "fp32, or mixed precision: bf16/fp16 weights and gradients, fp32 master, m, v", {"fp32", "bf16", "fp16"}}},
      {{"assign_buckets", "AssignBuckets", 10},
       {"launch_ready_buckets", "LaunchReadyBuckets", 10},
       {"wait_for_buckets", "WaitForBuckets", 5},
       {"average_gradients", "AverageGradients", 5},
       {"sync_this_micro_batch", "SyncThisMicroBatch", 5}},
      run_ddp_lab,
      nullptr,
      FaultPlan::Counted::collectives,  // DDP posts no sends: faults count its all-reduces
      /*overlaps_compute=*/true,
      {ViewKind::timeline, ViewKind::memory, ViewKind::report},
      {{"bucket-mb", "0.25"}, {"batch", "256"}},  // live in dtlab-viz: 3 buckets, not 1; layers long enough to see
  };
}

}  // namespace dtl
