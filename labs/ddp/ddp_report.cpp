// The DDP lab's measurements against one rank and its report rows (see ddp_lab.cpp).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "labs/ddp/ddp_lab.h"
#include "labs/measure.h"
#include "labs/report_format.h"

namespace dtl {

void measure_variant(Comm& comm, DdpMeasurement& m, const std::vector<float>& weights,
                     const std::vector<float>& first_grads, const OneRankReference& reference) {
  // Every rank must hold the same weights, and they must equal one rank on the global batch.
  std::vector<float> rank0 = weights;
  comm.broadcast(rank0.data(), rank0.size(), DType::f32, 0);
  double between = 0;
  for (std::size_t i = 0; i < rank0.size(); ++i)
    between = larger_difference(between, double(std::fabs(rank0[i] - weights[i])));
  if (comm.rank() == 0 &&
      (reference.weights.size() != weights.size() || reference.first_gradients.size() != weights.size()))
    throw Error("rank 0 reports, so it must hold the 1-rank reference (" + std::to_string(reference.weights.size()) +
                " weights for a model of " + std::to_string(weights.size()) + ")");
  for (std::size_t i = 0; i < reference.weights.size(); ++i)
    m.max_vs_single = larger_difference(m.max_vs_single, double(std::fabs(reference.weights[i] - weights[i])));
  // The averaged gradients of the first step against one rank's on the whole batch,
  // relative to their largest magnitude. Unlike the weights, they are not hidden by
  // AdamW's invariance to the gradient's scale (a missing 1/P changes no update much).
  double grad_diff = 0, grad_scale = 1e-30;
  for (std::size_t i = 0; i < first_grads.size() && i < reference.first_gradients.size(); ++i) {  // none: resumed
    grad_diff = larger_difference(grad_diff, double(std::fabs(reference.first_gradients[i] - first_grads[i])));
    grad_scale = std::max(grad_scale, double(std::fabs(reference.first_gradients[i])));
  }
  m.first_grad_rel_diff = grad_diff / grad_scale;
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
  return s.precision == DType::f32 ? 1e-5 : 2.0 * double(s.adamw.lr) * s.train_steps();
}

void add_memory_rows(Report& rep, const std::string& n, const DdpSettings& s, const DdpMeasurement& m) {
  add_model_state_rows(rep, n, " per rank", s.precision,
                       {double(m.params), double(m.param_peak), double(m.grad_peak), double(m.optimizer_peak)});
  if (s.precision == DType::f16)
    rep.add(n + "skipped_steps", "steps skipped (f16 gradients overflowed; loss scale halved)", m.skipped_steps, "");
  rep.add(n + "workspace_bytes", "workspace bytes per rank (peak)", double(m.workspace_peak), "B");
  // The estimate the run was admitted with (ddp_rank_bytes), against what was allocated.
  rep.check(n + "memory_peak", "memory per rank: peak vs estimate", double(m.total_peak), m.total_estimate, "B",
            0.1 * m.total_estimate)
      .from("model + AdamW + activations");
  rep.add(n + "activation_bytes", "activation bytes per rank (peak)", double(m.activation_peak), "B");
  add_device_memory_check(rep, n, m.device_vs_tracker);
}

void add_timing_rows(Report& rep, const std::string& n, const DdpMeasurement& m, const OneRankReference& reference,
                     int P) {
  const DdpTimings& t = m.time;
  rep.add(n + "compute_per_step", "compute per step (slowest rank)", 0, "s").over(t.compute);
  rep.add(n + "comm_per_step", "communication per step (all-reduce time)", 0, "s").over(t.comm);
  rep.add(n + "exposed_comm_per_step", "exposed communication per step", 0, "s").over(t.exposed);
  rep.add(n + "waiting_per_step", "waiting for slower ranks per step", 0, "s").over(t.imbalance);
  rep.add(n + "efficiency", "efficiency: compute / (compute + exposed)", 0, "").over(t.efficiency);
  rep.add(n + "step_time", "step time (slowest rank)", 0, "s").over(t.step);
  // Ideal: P. Below 1, the model is too small for this link: 1 rank is faster. The
  // range: the 1-rank median over the slowest and the fastest run's step.
  Repeated speedup;
  if (t.step.median > 0 && t.step.spread.min > 0)
    speedup = {reference.step_seconds.median / t.step.median,
               {reference.step_seconds.median / t.step.spread.max, reference.step_seconds.median / t.step.spread.min,
                t.step.spread.runs}};
  rep.add(n + "speedup", "speedup over 1 rank", 0, "x").over(speedup).predict(double(P), "ideal: P×");
}

}  // namespace

void add_ddp_rows(Report& rep, DdpVariant v, const DdpSettings& s, const DdpMeasurement& m,
                  const OneRankReference& reference, int P) {
  const std::string n = std::string(variant_name(v)) + ".";
  const double psi = double(m.params);
  const bool fp32 = s.precision == DType::f32;
  const bool resumed = m.checkpoints.resumed_from >= 0;  // step 0 ran in the run that saved
  if (!resumed) rep.add(n + "loss_first", "loss, first step", m.first_loss, "");
  rep.add(n + "loss_last", "loss, last step", m.last_loss, "");
  // fp32: sums in another order than the single process, a few ulps per step; AdamW keeps
  // them small. Mixed precision: see weight_tolerance.
  rep.check(n + "weight_diff_vs_one_rank", "max weight diff vs 1 rank", m.max_vs_single, 0.0, "", weight_tolerance(s))
      .from(fp32 ? "fp32 sum order" : "16-bit rounding");
  rep.check(n + "weight_diff_between_ranks", "max weight diff between ranks", m.max_between_ranks, 0.0, "")
      .from("same bits");
  // fp32: summation order; a sum of n rounded terms drifts like √n·2^-24, so the bound
  // grows with the batch (1e-5 up to ~6,000 rows). 16 bits: each rank's gradient and their
  // sum are rounded to 8 (bf16) or 11 (f16) significant bits, the sum once per addition
  // (labs/measure.h: sixteen_bit_gradient_bound).
  const double fp32_bound = std::max(1e-5, 8.0 * std::sqrt(double(s.batch)) * std::ldexp(1.0, -24));
  if (!resumed)
    rep.check(n + "grad_diff_vs_one_rank", "max step-1 gradient diff vs 1 rank (relative)", m.first_grad_rel_diff, 0.0,
              "", fp32 ? fp32_bound : sixteen_bit_gradient_bound(s.precision, P))
        .from(fp32 ? "√batch·2^-24" : sixteen_bit_gradient_formula(s.precision));
  add_timing_rows(rep, n, m, reference, P);
  add_checkpoint_report(rep, n, m.checkpoints);
  const double esize = double(dtype_size(s.precision));
  rep.check(n + "grad_bytes_reduced", "gradient bytes all-reduced per rank per step", m.grad_bytes_per_step,
            esize * psi, "B")
      .from(format_number(esize) + " B/param");
  // What a ring all-reduce of those bytes puts on each rank's link (the library's own
  // wire is not observed here; the collectives lab measures the ring's bytes from events).
  rep.add(n + "ring_wire_bytes", "ring wire bytes per rank per step", 2.0 * (P - 1) / P * m.grad_bytes_per_step, "B")
      .predict(2.0 * (P - 1) / P * esize * psi, "ring 2(P-1)/P·N");
  add_memory_rows(rep, n, s, m);
  if (m.buckets == 0) return;
  rep.add(n + "buckets", "buckets", double(m.buckets), "");
  rep.check(n + "requests_left_after_wait", "requests left in pending after wait_for_buckets",
            double(m.left_after_wait), 0, "")
      .from("waited, then cleared");
}

void describe_ddp_setup(Report& rep, const DdpSettings& s, const std::vector<DdpVariant>& variants,
                        const LabConfig& cfg, std::size_t params) {
  const int P = rep.ranks;
  char mlp[128];
  std::snprintf(mlp, sizeof mlp, "MLP %d wide × %d layers (%zu params)", s.shape.width, s.shape.layers, params);
  rep.setup.push_back(mlp);
  rep.setup.push_back("batch " + std::to_string(s.batch) + " (" + std::to_string(s.batch / P) + " per rank)");
  rep.setup.push_back(s.precision == DType::f32 ? "fp32" : std::string(dtype_name(s.precision)) + " mixed precision");
  std::string names;
  for (const DdpVariant v : variants) names += (names.empty() ? "" : ", ") + std::string(variant_name(v));
  rep.setup.push_back("variant " + names);
  rep.setup.push_back("buckets ≤ " + format_number(s.bucket_mb) + " MiB");
  if (std::find(variants.begin(), variants.end(), DdpVariant::accumulate) != variants.end())
    rep.setup.push_back(std::to_string(s.micro) + " micro-batches (accumulate)");
  if (cfg.slow_rank >= 0)
    rep.setup.push_back("rank " + std::to_string(cfg.slow_rank) + " computes " + format_number(cfg.slow_factor) +
                        "× slower");
  rep.notes.push_back("Times per step: the median of " + count_of(s.repeat, "run") + " of " +
                      count_of(s.steps, "step") +
                      " (min–max), after 1 warm-up step. Exposed communication: the wait after backward of the "
                      "rank that finished backward last; waiting for slower ranks: what the others waited on top.");
  rep.notes.push_back(
      "Speedup: 1 rank's step on the global batch (measured by rank 0 in this run) over this step; "
      "ideally P. Below 1 the model is too small for the link: 1 rank is faster.");
}

}  // namespace dtl
