// The ZeRO lab's report rows (see zero_lab.cpp) and its registry entry.
#include <algorithm>
#include <cmath>

#include "labs/measure.h"
#include "labs/report_format.h"
#include "labs/zero/zero_lab.h"

namespace dtl {

namespace {

std::size_t tag(const ZeroMemory& m, MemTag t) { return m.peak[std::size_t(t)]; }

// fp32: sums in another order than one process, a few ulps per step. 16 bits: gradients
// rounded to 8 (bf16) or 11 (f16) significant bits; where a gradient is near 0, AdamW
// (dividing by √v) can flip an update's sign: up to 2·lr per step.
double weight_tolerance(const ZeroSettings& s) {
  return s.precision == DType::f32 ? 1e-5 : 2.0 * double(s.adamw.lr) * s.train_steps();
}

void add_equivalence_rows(Report& rep, const std::string& n, const ZeroSettings& s, const ZeroMeasurement& m, int P) {
  const bool fp32 = s.precision == DType::f32;
  const bool resumed =
      m.checkpoints.resumed_from >= 0;  // step 0 ran in the run that saved: its loss and gradients are not here
  if (!resumed) rep.add(n + "loss_first", "loss, first step", m.first_loss, "");
  rep.add(n + "loss_last", "loss, last step", m.last_loss, "");
  rep.check(n + "weight_diff_vs_one_rank", "max weight diff vs 1 rank", m.max_vs_reference, 0.0, "",
            weight_tolerance(s))
      .from(fp32 ? "fp32 sum order" : "16-bit rounding");
  if (m.max_vs_stage0 >= 0)
    rep.check(n + "weight_diff_vs_stage0", "max weight diff vs stage 0 (DDP)", m.max_vs_stage0, 0.0, "",
              weight_tolerance(s))
        .from(fp32 ? "fp32 sum order" : "16-bit rounding");
  if (!fp32)
    rep.check(n + "weight_diff_vs_fp32", "max weight diff vs 1 rank in fp32", m.max_vs_fp32, 0.0, "",
              2.0 * double(s.adamw.lr) * s.train_steps())
        .from("2·lr per step");
  // A missing 1/N hides in AdamW's weights (it is invariant to the gradient's scale), not here.
  const double fp32_bound = std::max(1e-5, 8.0 * std::sqrt(double(s.batch)) * std::ldexp(1.0, -24));
  if (!resumed)
    rep.check(n + "grad_diff_vs_one_rank", "max step-1 gradient diff vs 1 rank (relative)", m.first_grad_rel_diff, 0.0,
              "", fp32 ? fp32_bound : sixteen_bit_gradient_bound(s.precision, P))
        .from(fp32 ? "√batch·2^-24" : sixteen_bit_gradient_formula(s.precision));
  if (s.precision == DType::f16)
    rep.add(n + "skipped_steps", "steps skipped (f16 overflow; loss scale halved)", m.skipped_steps, "");
}

// Model state against the formula of the precision run, and beside it the seeds' three counts.
void add_model_state_rows(Report& rep, const std::string& n, const ZeroSettings& s, const ZeroMeasurement& m,
                          double psi, int P) {
  const theory::ZeroPrecision pp = s.bytes_per_param();
  const theory::ZeroBytes b = theory::zero_bytes_per_param(stage_number(m.stage), P, pp);
  const ZeroMemory& r0 = m.memory[0];
  rep.add(n + "param_bytes", "params per rank (rank 0)", double(tag(r0, MemTag::param)), "B")
      .predict(psi * b.params, "Ψ·p/N^[s≥3]");
  rep.add(n + "grad_bytes", "grads per rank (rank 0)", double(tag(r0, MemTag::grad)), "B")
      .predict(psi * b.grads, "Ψ·g/N^[s≥2]");
  rep.add(n + "optimizer_bytes", "master + m + v per rank (rank 0)",
          double(tag(r0, MemTag::master) + tag(r0, MemTag::optimizer)), "B")
      .predict(psi * b.optimizer, "Ψ·K/N^[s≥1]");
  // Every rank: the events add up to the buffers it was built with, and those equal the
  // formula up to the padding (at most (p+g+K) bytes per padding element).
  double worst_exact = 0, worst_formula = 0, worst_measured = 0;
  for (int r = 0; r < P; ++r) {
    const double measured = double(m.memory[std::size_t(r)].model_state());
    worst_exact = std::max(worst_exact, std::fabs(measured - m.exact_model_state[std::size_t(r)]));
    if (std::fabs(measured - psi * b.total()) >= std::fabs(worst_measured - psi * b.total()) || r == 0) {
      worst_formula = std::fabs(measured - psi * b.total());
      worst_measured = measured;
    }
  }
  (void)worst_formula;
  const double bound = (pp.param + pp.grad + pp.optimizer) * double(m.padding);
  rep.check(n + "model_state_bytes", "model state per rank (the rank farthest off)", worst_measured, psi * b.total(),
            "B", bound)
      .from(format_number(b.total()) + " B/param, ± padding");
  rep.check(n + "model_state_vs_buffers", "model state: events - buffer sizes (max over ranks)", worst_exact, 0.0, "B")
      .from("exact");
  const double rank0 = double(r0.model_state());
  struct Convention {
    theory::ZeroConvention c;
    const char* id;
    const char* source;  // the course text that gives this convention
  };
  for (const Convention& c : {Convention{theory::ZeroConvention::sixteen, "conv16", "Parallelism Basic"},
                              Convention{theory::ZeroConvention::twelve, "conv12", "Distributed Training Mathematics"},
                              Convention{theory::ZeroConvention::eight, "conv8", "When One GPU Isn't Enough"}})
    rep.add(n + c.id, std::string("model state vs ") + theory::zero_convention_name(c.c), rank0, "B")
        .predict(theory::zero_model_state_bytes(psi, stage_number(m.stage), P, c.c), c.source);
  rep.add(n + "padding", "padding elements (all ranks)", double(m.padding), "");
}

// Peak per rank against the formula, and what the formula leaves out on the rank farthest above it.
void add_residual_rows(Report& rep, const std::string& n, const ZeroSettings& s, const ZeroMeasurement& m, double psi,
                       int P) {
  const double formula = psi * theory::zero_bytes_per_param(stage_number(m.stage), P, s.bytes_per_param()).total();
  int worst = 0;
  for (int r = 0; r < P; ++r) {
    const ZeroMemory& z = m.memory[std::size_t(r)];
    rep.add(n + "peak_rank" + std::to_string(r), "rank " + std::to_string(r) + ": peak memory", double(z.peak_total),
            "B")
        .predict(formula, "model-state formula");
    if (z.peak_total > m.memory[std::size_t(worst)].peak_total) worst = r;
  }
  const ZeroMemory& z = m.memory[std::size_t(worst)];
  const auto at = [&](MemTag t) { return double(z.at_peak[std::size_t(t)]); };
  const double state = at(MemTag::param) + at(MemTag::grad) + at(MemTag::master) + at(MemTag::optimizer);
  const std::string who = "rank " + std::to_string(worst) + " residual: ";
  rep.add(n + "residual_gather", who + "gather buffers", at(MemTag::gather), "B");
  rep.add(n + "residual_buckets", who + "reduce buckets", at(MemTag::comm), "B");
  rep.add(n + "residual_activations", who + "activations", at(MemTag::activation), "B");
  rep.add(n + "residual_data", who + "the batch (inputs, targets, dL/dy)", at(MemTag::data), "B");
  rep.add(n + "residual_workspace", who + "workspace", at(MemTag::other), "B");
  rep.add(n + "residual_padding", who + "padding, uneven shards", state - formula, "B");
  rep.check(n + "residual_total", who + "peak - formula = the rows above", double(z.peak_total) - formula,
            at(MemTag::gather) + at(MemTag::comm) + at(MemTag::activation) + at(MemTag::data) + at(MemTag::other) +
                state - formula,
            "B")
      .from("sum of the split");
  rep.add(n + "pool_reserved", "buffer pool reserved (rank 0)", double(m.pool_reserved[0]), "B");
  add_device_memory_check(rep, n, m.device_vs_tracker);
}

void add_comm_rows(Report& rep, const std::string& n, const ZeroSettings& s, const ZeroMeasurement& m, double psi,
                   std::size_t padded_numel, int P) {
  const double es = double(dtype_size(s.precision)), ring = double(P - 1) / P;
  // Exact: the collectives move whole padded units: 2 (stage 3: 3) passes of N·chunk elements,
  // stage 0 one all-reduce (2 passes) of Ψ; f16's overflow vote adds one float all-reduced.
  const double passes = shards_params(m.stage) ? 3 : 2;
  double exact = shards_optimizer(m.stage) ? passes * ring * double(padded_numel) * es : 2 * ring * psi * es;
  if (shards_optimizer(m.stage) && s.precision == DType::f16) exact += 2 * ring * 4;
  rep.check(n + "bus_bytes_per_step", "bytes sent per rank per step (ring)", m.bus_bytes_per_step, exact, "B",
            1e-9 * exact)
      .from(shards_params(m.stage)      ? "3·N·chunk·(N-1)/N"
            : shards_optimizer(m.stage) ? "2·N·chunk·(N-1)/N"
                                        : "2Ψ(N-1)/N");
  rep.add(n + "comm_formula", "bytes per rank per step vs the formula", m.bus_bytes_per_step, "B")
      .predict(theory::zero_comm_elements_per_rank(psi, stage_number(m.stage), P) * es,
               shards_params(m.stage) ? "3Ψ(N-1)/N" : "2Ψ(N-1)/N");
}

}  // namespace

std::size_t ZeroMemory::model_state() const {
  return peak[std::size_t(MemTag::param)] + peak[std::size_t(MemTag::grad)] + peak[std::size_t(MemTag::master)] +
         peak[std::size_t(MemTag::optimizer)];
}

void add_zero_rows(Report& rep, const ZeroSettings& s, const ZeroMeasurement& m, std::size_t psi, int P) {
  const std::string n = stage_case(m.stage) + ".";
  add_equivalence_rows(rep, n, s, m, P);
  if (!shards_optimizer(m.stage))
    rep.add(n + "buckets", "all-reduce buckets (DDP's, --bucket-mb)", double(m.buckets), "");
  rep.add(n + "step_time", "step time (slowest rank)", 0, "s").over(m.step);
  add_checkpoint_report(rep, n, m.checkpoints);
  rep.add(n + "exposed_comm", "waiting on communication per step", 0, "s").over(m.exposed);
  rep.add(n + "optimizer_time", "optimizer step (slowest rank; AdamW over its shard)", 0, "s").over(m.optimizer);
  if (shards_params(m.stage))
    rep.add(n + "exposed_allgather",
            "of which parameter all-gathers (prefetch " + std::to_string(m.prefetch_depth) + ")", 0, "s")
        .over(m.exposed_gather);
  // Padded elements: Ψ plus the padding, which is what make_zero_units laid out.
  add_comm_rows(rep, n, s, m, double(psi), psi + m.padding, P);
  add_model_state_rows(rep, n, s, m, double(psi), P);
  add_residual_rows(rep, n, s, m, double(psi), P);
}

void add_prefetch_sweep(Report& rep, const std::vector<ZeroMeasurement>& sweep, double stage0_step) {
  ReportPlot plot{"prefetch_sweep",
                  "stage 3: prefetch depth, exposed all-gather time against peak memory",
                  "peak memory (rank 0)",
                  "B",
                  "exposed all-gather per step",
                  "s",
                  {},
                  {},
                  {}};
  for (const ZeroMeasurement& m : sweep) {
    const std::string d = "prefetch" + std::to_string(m.prefetch_depth);
    rep.add(d + ".exposed_allgather", "exposed all-gather per step", 0, "s").over(m.exposed_gather);
    rep.add(d + ".peak_memory", "peak memory (rank 0)", double(m.memory[0].peak_total), "B");
    rep.add(d + ".gather_peak", "gather buffers at most (rank 0)",
            double(m.memory[0].peak[std::size_t(MemTag::gather)]), "B");
    rep.add(d + ".step_time", "step time (slowest rank)", 0, "s").over(m.step);
    if (stage0_step > 0) rep.add(d + ".step_vs_ddp", "step time / stage 0's", m.step.median / stage0_step, "x");
    plot.x.push_back(double(m.memory[0].peak_total));
    plot.y.push_back(m.exposed_gather.median);
    plot.point_labels.push_back("depth " + std::to_string(m.prefetch_depth));
  }
  rep.plots.push_back(plot);
}

void describe_zero_setup(Report& rep, const ZeroSettings& s, const std::vector<ZeroStage>& stages, std::size_t psi,
                         int units) {
  const int P = rep.ranks;
  char mlp[128];
  std::snprintf(mlp, sizeof mlp, "MLP %d wide × %d layers (Ψ = %zu params)", s.shape.width, s.shape.layers, psi);
  rep.setup.push_back(mlp);
  rep.setup.push_back("batch " + std::to_string(s.batch) + " (" + std::to_string(s.batch / P) + " per rank)");
  rep.setup.push_back(s.precision == DType::f32
                          ? "fp32 (4+4+8 B/param)"
                          : std::string(dtype_name(s.precision)) + (s.master == MasterWeights::keep
                                                                        ? " mixed, fp32 master (2+2+12 B/param)"
                                                                        : " mixed, no master (2+2+8 B/param)"));
  std::string names;
  for (ZeroStage st : stages) names += (names.empty() ? "" : ", ") + std::to_string(stage_number(st));
  rep.setup.push_back("stage " + names);
  rep.setup.push_back(std::to_string(units) + " sharding units of " + std::to_string(s.layers_per_unit) + " layer(s)");
  rep.setup.push_back(s.prefetch_depth ? "prefetch " + std::to_string(s.prefetch_depth) + " unit(s) ahead"
                                       : "no prefetch");
  rep.notes.push_back(
      "Memory from each rank's alloc/free events. Model state = params + grads + fp32 master + m + v; "
      "the formula (the course text Parallelism Basic: p + g + K over N per sharded part) holds it up to the "
      "padding: each unit "
      "is padded to N·ceil(n/N) elements.");
  rep.notes.push_back(
      "Bytes: what a ring moves per rank — (N-1)/N of each reduce-scatter and all-gather buffer, 2(N-1)/N "
      "of each all-reduce — from the collectives' events; exact against whole padded units.");
  rep.notes.push_back("Times per step: the median of " + count_of(s.repeat, "run") + " of " +
                      count_of(s.steps, "step") +
                      " (min–max) after 1 warm-up step; waiting: the mean over ranks of the time blocked on a "
                      "collective.");
}

}  // namespace dtl
