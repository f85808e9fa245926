// The experts lab's report rows (experts_lab.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/util/units.h"
#include "labs/experts/experts_lab.h"
#include "labs/experts/routing.h"
#include "labs/measure.h"
#include "labs/report_format.h"

namespace dtl {

namespace {

// How far EP ranks' weights may be from one rank's after the steps. The gradients agree to
// fp32 sum order (the row above), but AdamW's step is lr·m̂/(√v̂ + ε): on the first step
// lr·g/(|g| + ε), whose slope is up to 1/ε at g = 0, so a gradient near ε (a weight that barely
// matters) turns a sum-order difference into an update difference of up to 2·lr. Measured on
// the GPT (issue 46): hidden 256 differed by 0.024·lr, hidden 1024 by 0.12–0.37·lr after one
// step, with gradients equal to 1e-6 of each tensor's max: Adam's amplification, not a
// divergence (the fixed 0.02·lr failed them). The bound is the run's own first-update
// difference (ExpertsMeasurement::first_update_diff, from both runs' gradients) plus the
// 0.02·lr that held on the small models, per step.
double weight_tolerance(const ExpertsSettings& s, const ExpertsMeasurement& m) {
  return adam_weight_tolerance(double(s.adamw.lr), s.steps, m.first_update_diff);
}

void add_equivalence_rows(Report& rep, const ExpertsSettings& s, const ExpertsMeasurement& m) {
  if (!s.check) return;
  const bool first_step = m.loss_diff >= 0;  // false: a resumed run, whose first step is not step 0
  if (first_step) {
    rep.check("loss_vs_one_rank", "|loss − 1 rank's| (first step)", m.loss_diff, 0, "",
              1e-5 * std::max(1.0, double(std::fabs(m.first_loss))))
        .from("same routing groups");
    rep.check("grad_vs_one_rank", "max gradient diff vs 1 rank (÷ tensor's max)", m.max_grad_rel_diff, 0, "", 1e-5)
        .from("fp32 sum order");
    rep.add("first_update_vs_one_rank", "AdamW's first update: largest difference vs 1 rank (÷ lr)",
            m.first_update_diff, "")
        .source = "g/(|g|+ε) of both runs' gradients";
  }
  rep.check("weights_vs_one_rank", "max weight diff vs 1 rank after the steps", m.max_weight_diff, 0, "",
            weight_tolerance(s, m))
      .from("lr·(Δ first update + 0.02) per step");
  if (!first_step) return;
  rep.check("routing_vs_one_rank", "slots routed or dropped differently from 1 rank", m.routing_differences, 0, "")
      .from("same choices");
  rep.check("dropped_vs_one_rank", "dropped slots (all ranks, every block)", m.dropped, m.reference_dropped, "")
      .from("1 rank's drops");
}

// The exercises on crafted inputs against the lab's brute force (routing.h): the rows above
// compare with one rank running the same exercises, which shares their mistakes.
void add_crafted_rows(Report& rep) {
  rep.check("router_vs_float64", "top_k_router on crafted logits: slots unlike a float64 softmax's top k",
            moe::router_errors_on_crafted_logits(), 0, "")
      .from("float64 softmax");
  rep.check("dispatch_vs_brute_force", "dispatch_layout on a crafted routing: entries unlike the layout",
            moe::dispatch_errors_on_crafted_routing(), 0, "")
      .from("rank, expert, token order");
  rep.check("combine_vs_float64", "combine_rows on crafted rows: largest |difference|",
            moe::combine_error_on_crafted_rows(), 0, "", 1e-6)
      .from("float64 weighted sum");
}

void add_traffic_rows(Report& rep, const ExpertsSettings& s, const ExpertsMeasurement& m, int ep) {
  const moe::MoeShape& sh = s.shape;
  rep.check("a2a.calls", "all-to-all calls per step", m.a2a_calls, m.a2a_calls_expected, "")
      .from("5 per block: counts + 2 fwd + 2 bwd");
  rep.check("a2a.bytes_vs_routing", "|all_to_allv bytes − routed rows × h × 4|, every call", m.a2a_bytes_diff, 0, "B")
      .from("trace vs routing");
  const double tokens = double(sh.tokens) / ep, balanced = tokens * sh.top_k * sh.hidden * 4.0;
  rep.add("a2a.dispatch_bytes", "dispatch bytes per rank and block (own rows too)", m.dispatch_bytes, "B")
      .predict(balanced, "T/EP·k·h·4 if none dropped");
  rep.add("a2a.to_other_ranks", "of which to other ranks", m.to_others_bytes, "B")
      .predict(balanced * (ep - 1) / ep, "balanced: T/EP·k·h·(EP−1)/EP·4");
}

void add_load_rows(Report& rep, const ExpertsSettings& s, const ExpertsMeasurement& m, int ep) {
  const moe::MoeShape& sh = s.shape;
  if (sh.drop)
    rep.add("load.capacity", "capacity: slots per expert and rank", m.capacity, "")
        .predict(std::max(1.0, std::ceil(sh.capacity_factor * sh.top_k * sh.tokens / ep / sh.experts)),
                 "⌈C·k·(T/EP)/E⌉");
  rep.add("load.dropped_share", "dropped slots, share of T·k·L", m.slots > 0 ? m.dropped / m.slots : 0, "x");
  rep.add("load.busiest_expert", "choices of the busiest expert ÷ mean (before capacity)",
          m.mean_per_expert > 0 ? m.max_per_expert / m.mean_per_expert : 0, "x")
      .predict(1, "balanced");
  rep.add("load.rows_max_over_mean", "rows the busiest rank's experts computed ÷ mean",
          m.rows_mean > 0 ? m.rows_max / m.rows_mean : 0, "x")
      .predict(1, "balanced");
  rep.add("time.expert_imbalance", "expert compute (CPU time), busiest rank ÷ mean",
          m.expert_seconds_mean > 0 ? m.expert_seconds_max / m.expert_seconds_mean : 0, "x")
      .predict(m.rows_mean > 0 ? m.rows_max / m.rows_mean : 0, "rows max ÷ mean");
}

void add_time_rows(Report& rep, const ExpertsMeasurement& m) {
  rep.add("time.step", "step time (slowest rank)", m.step.median, "s").over(m.step);
  rep.add("time.all_to_all", "all-to-all time per step (rank mean, waits included)", m.a2a_seconds, "s");
  ReportRow& least =
      rep.add("time.all_to_all_least", "all-to-all time per step, the rank waiting least", m.a2a_seconds_min, "s");
  if (m.predicted_a2a_seconds > 0) least.predict(m.predicted_a2a_seconds, "link: (P−1)α + busier side/β");
  rep.add("time.all_to_all_share", "all-to-all share of the step",
          m.step.median > 0 ? m.a2a_seconds / m.step.median : 0, "x");
  rep.add("time.experts", "expert compute per step (rank mean)", m.expert_wall_seconds, "s");
  if (m.checkpoints.resumed_from < 0) rep.add("loss.first", "loss, first step", m.first_loss, "");  // else: not run
  rep.add("loss.last", "loss, last step", m.last_loss, "");
  rep.add("loss.aux", "load-balancing loss E·Σ fᵢ·Pᵢ (1 = balanced)", m.aux_loss, "").predict(1, "uniform");
}

}  // namespace

void describe_experts_setup(Report& rep, const ExpertsSettings& s) {
  const moe::MoeShape& m = s.shape;
  rep.setup.push_back(std::to_string(m.experts) + " experts, top-" + std::to_string(m.top_k));
  rep.setup.push_back(s.overflow == ExpertOverflow::drop ? "capacity factor " + format_g(m.capacity_factor)
                                                         : "no capacity (none dropped)");
  const std::string experts = std::to_string(m.hidden) + "→" + std::to_string(m.ffn) + "→" + std::to_string(m.hidden);
  if (s.model == ExpertsModelKind::gpt) {
    rep.setup.push_back("tiny GPT: " + std::to_string(m.layers) + " layers, h " + std::to_string(m.hidden) + ", " +
                        std::to_string(s.gpt.heads) + " heads, V " + std::to_string(s.gpt.vocab));
    rep.setup.push_back("every MLP " + std::to_string(m.experts) + " experts " + experts);
    rep.setup.push_back(std::to_string(s.gpt.batch) + " × " + std::to_string(s.gpt.seq) + " tokens per step");
  } else {
    rep.setup.push_back(count_of(m.layers, "MoE block") + " " + experts);
    rep.setup.push_back(std::to_string(m.tokens) + " tokens per step");
  }
  if (m.router_skew > 0) rep.setup.push_back("router skew " + format_g(m.router_skew));
  rep.notes.push_back(
      "Each rank holds E/EP experts and routes T/EP tokens; capacity is per expert and rank (GShard's "
      "groups), so 1 rank routing the same groups drops the same slots.");
  if (s.model == ExpertsModelKind::gpt)
    rep.notes.push_back(
        "The GPT: attention, LayerNorms and embeddings replicated, each rank B/EP sequences, their "
        "gradients summed over the ranks; each block's MLP the mixture of experts (its loss: "
        "cross-entropy + α·the load-balancing loss).");
  rep.notes.push_back(
      "Bytes: every all_to_allv event in the trace against the rows the routing sent (kept slots out, "
      "the experts' rows back); balanced routing sends (T/EP)·k·h·(EP−1)/EP·4 B to other ranks.");
  rep.notes.push_back(
      "Times: medians over the steps after the first; all-to-all time includes waiting for the rank "
      "whose experts got the most rows (--router-skew makes the first ranks' experts hot).");
}

void add_experts_rows(Report& rep, const ExpertsSettings& s, const ExpertsMeasurement& m, int ep) {
  add_equivalence_rows(rep, s, m);
  add_crafted_rows(rep);
  add_traffic_rows(rep, s, m, ep);
  add_load_rows(rep, s, m, ep);
  add_time_rows(rep, m);
  add_checkpoint_report(rep, "", m.checkpoints);
}

}  // namespace dtl
