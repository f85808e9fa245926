// The grid lab's memory vs the planner's (grid_planner.h).
#include "labs/grid/grid_planner.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/theory/plan.h"
#include "labs/train/gpt.h"

namespace dtl {

namespace {

namespace th = dtl::theory;

constexpr th::ZeroPrecision kFp32{4, 4, 8};  // fp32 parameters and gradients, AdamW's m and v

int stage_of(const GridSettings& s, int rank) { return rank / (s.grid.dp * s.grid.tp); }

// What the planner predicts for one rank's model state, plus the gradient shard ZeRO-1's
// reduce-scatter writes into (the lab tags it grad; the planner keeps ZeRO-1's gradients whole
// and counts no buffer). `optimizer_slack`: the lab pads Ψ_rank to D·⌈Ψ_rank/D⌉, so its AdamW
// shard is up to 8 B (one element's m and v) above the planner's 8·Ψ_rank/D.
struct RankPrediction {
  th::Memory planner;
  double shard_grads = 0, optimizer_slack = 0;
};

RankPrediction predict_rank(const GridSettings& s, int rank) {
  const double psi = grid_rank_params(s, rank);
  const int zero = s.zero == GridZero::optimizer_states ? 1 : 0, D = s.grid.dp;
  RankPrediction p;
  p.planner = th::rank_model_state(psi, zero, D, kFp32);
  if (zero == 1) {
    p.shard_grads = kFp32.grad * std::ceil(psi / D);
    p.optimizer_slack = kFp32.optimizer;
  }
  return p;
}

// The largest |measured − predicted| over every rank's parameters, gradients and optimizer.
double worst_model_state(const GridSettings& s, const GridMeasurement& m) {
  double worst = 0;
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const GridRankFigures& f = m.ranks[r];
    const RankPrediction p = predict_rank(s, int(r));
    worst = std::max({worst, std::fabs(f.param_bytes - p.planner.params),
                      std::fabs(f.grad_bytes - p.planner.grads - p.shard_grads),
                      std::max(0.0, std::fabs(f.optimizer_bytes - p.planner.optimizer) - p.optimizer_slack)});
  }
  return worst;
}

// Activation bytes per layer and micro-batch (what the planner multiplies by its layers and
// micro-batches in flight) and what rank 0 holds besides, per micro-batch in flight.
struct ActivationMap {
  double layer_bytes = 0, rank0_extra = 0, running = 0;  // running: a block's recomputed set beyond the end's
};

ActivationMap activation_map(const GridSettings& s) {
  const double h = s.hidden, T = s.grid.tp, R = s.micro_rows();
  if (s.model == GridModelKind::mlp) {  // x, c_fc's output before and after GELU; the stage's output
    if (s.mlp_form == TpMlpForm::residual_blocks) return {4 * (R * h + 2 * R * 4 * h / T), 4 * R * h};
    // The stack's blocks keep c_proj's output before its GELU too, all but the model's last: a
    // first stage that holds it (P = 1) keeps 4Rh less than ⌈L/P⌉ such layers.
    return {4 * (R * h + 2 * R * h / T + R * h), s.grid.pp == 1 ? 0.0 : 4 * R * h};
  }
  // The GPT's own count (labs/train/gpt.h, gpt_activation_parts): one block, and rank 0's end
  // part — its output to the next stage, or with P = 1 the head's; with recomputation the
  // running block's set on top (GptActivationBytes::peak).
  const GptConfig c{s.vocab, s.seq, s.hidden, s.heads, s.layers, s.micro_sequences()};
  const StageBlocks b = stage_blocks(s.layers, s.grid.pp, 0);
  const GptActivationBytes p =
      gpt_activation_parts(c, s.grid.tp, ex::TpMode::plain, {b.first, b.last, true, s.grid.pp == 1}, s.recompute);
  return {p.block, p.end, std::max(0.0, p.recomputed - p.end)};
}

void add_activation_row(Report& rep, const GridSettings& s, const GridMeasurement& m) {
  const int P = s.grid.pp, M = s.micro_batches;
  const ActivationMap a = activation_map(s);
  const int first_stage_layers = stage_blocks(s.layers, P, 0).count();  // ⌈L/P⌉, as the planner counts
  const double planner = th::activations_in_flight(a.layer_bytes, first_stage_layers, M, P);
  const double extra = a.rank0_extra * std::min(M, P) + a.running;
  if (s.schedule == pipeline::ScheduleKind::one_f_one_b) {
    rep.check("planner.activation_bytes", "rank 0: activations (peak)", m.ranks[0].activation_peak, planner + extra,
              "B")
        .from("planner's + out (note)");
  } else {  // GPipe keeps all M micro-batches: the planner's min(M, P) does not apply
    rep.add("planner.activation_bytes", "rank 0: activations (peak)", m.ranks[0].activation_peak, "B")
        .predict(planner + extra, "1F1B's; GPipe keeps M");
  }
}

// How the model maps onto the planner's transformer model (grid_planner.h), under the rows.
std::string planner_note(const GridSettings& s, long long psi_rank0) {
  const bool mlp = s.model == GridModelKind::mlp;
  std::string n =
      "Planner: dtlab plan's memory model (rank_model_state, activations_in_flight) in fp32, 4+4+8 B per "
      "parameter, fed Ψ_rank = the parameters the rank holds (rank 0: " +
      std::to_string(psi_rank0) +
      (mlp && s.mlp_form == TpMlpForm::layer_stack ? "; blocks × (2h²/T + h/T + h)"
       : mlp                                       ? "; blocks × (8h²/T + 4h/T + h)"
                                                   : "; blocks × (12h²/T + 7h/T + 6h), + Vh/T + sh on the first "
                                                     "stage, + 2h (+ Vh/T, the head's wte) on the last") +
      ") for its Ψ/(tp·pp), and " +
      (mlp && s.mlp_form == TpMlpForm::layer_stack ? "a stack block's 4(Rh + 2Rh/T + Rh) (the last block's 4Rh less)"
       : mlp                                       ? "an MLP block's 4(Rh + 8Rh/T)"
                                                   : "the fp32 GPT's count (gpt.h)") +
      " activation bytes per layer and micro-batch for its transformer formula (Korthikanti's, 16-bit); "
      "it counts ⌈L/P⌉ layers × min(M,P) micro-batches in flight (1F1B, first stage). The lab also "
      "holds rank 0's output to the next stage (out = 4Rh per micro-batch in flight; with P = 1 the head's)";
  if (s.zero == GridZero::optimizer_states)
    n += " and ZeRO-1's reduce-scatter shard of the gradients (RS shard = 4⌈Ψ_rank/D⌉; the planner keeps ZeRO-1's "
         "gradients whole and counts no buffer); its AdamW shard is padded to ⌈Ψ_rank/D⌉ elements (< 8 B more)";
  return n + ": both are added to the prediction.";
}

}  // namespace

double grid_rank_params(const GridSettings& s, int rank) {
  const double h = s.hidden, T = s.grid.tp, V = s.vocab, S = s.seq;
  const int stage = stage_of(s, rank);
  const double blocks = stage_blocks(s.layers, s.grid.pp, stage).count();
  if (s.model == GridModelKind::mlp) {
    const double ff = s.mlp_shape(0).ff();  // c_fc [ff × h] and its bias, c_proj [h × ff] (its bias whole)
    return blocks * (2 * h * ff / T + ff / T + h);
  }
  // GPT block: ln_1, ln_2 (2h each); c_attn 3h²/T + 3h/T, attn.c_proj h²/T + h, c_fc 4h²/T + 4h/T,
  // mlp.c_proj 4h²/T + h (c_proj biases on every tp rank). Ends: wte (V/T rows) and wpe; ln_f
  // and, on a last stage that is not also the first, its own copy of the tied wte.
  const bool first = stage == 0, last = stage == s.grid.pp - 1;
  return blocks * (12 * h * h / T + 7 * h / T + 6 * h) + (first ? V * h / T + S * h : 0) +
         (last ? 2 * h + (first ? 0 : V * h / T) : 0);
}

void add_planner_memory_rows(Report& rep, const GridSettings& s, const GridMeasurement& m) {
  const RankPrediction p = predict_rank(s, 0);
  const GridRankFigures& r0 = m.ranks[0];
  const bool zero1 = s.zero == GridZero::optimizer_states;
  const long long psi = std::llround(grid_rank_params(s, 0));
  rep.check("planner.param_bytes", "rank 0: parameters", r0.param_bytes, p.planner.params, "B").from("4Ψ_rank (fp32)");
  rep.check("planner.grad_bytes", "rank 0: gradients", r0.grad_bytes, p.planner.grads + p.shard_grads, "B")
      .from(zero1 ? "4Ψ_rank + RS shard" : "4Ψ_rank");
  rep.check("planner.optimizer_bytes", "rank 0: optimizer state", r0.optimizer_bytes, p.planner.optimizer, "B",
            p.optimizer_slack)
      .from(zero1 ? "8Ψ_rank/D (padded)" : "8Ψ_rank (m, v)");
  add_activation_row(rep, s, m);
  rep.check("planner.model_state_worst", "model state: worst rank and part", worst_model_state(s, m), 0.0, "B")
      .from("every rank's Ψ_rank");
  rep.notes.push_back(planner_note(s, psi));
}

}  // namespace dtl
