// The grid lab's settings, report rows and registry entry (see grid_lab.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "core/theory/schedule.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "labs/grid/grid_lab.h"
#include "labs/grid/grid_planner.h"
#include "labs/measure.h"
#include "labs/report_format.h"
#include "labs/train/gpt.h"

namespace dtl {

namespace {

// The model's own constraints on the grid, each a UsageError naming it.
void check_model(const GridSettings& s) {
  const std::string n_tp = std::to_string(s.grid.tp);
  tokens_per_step(s.batch, s.seq);  // counted in an int (GridSettings::global_rows)
  if (s.model == GridModelKind::mlp) {
    const int ff = s.mlp_shape(0).ff();
    if (ff % s.grid.tp != 0)
      throw UsageError(std::string(ff == s.hidden ? "" : "4 × ") + "--hidden " + std::to_string(s.hidden) +
                       " is not divisible by --tp " + n_tp + ": the MLP's " + (ff == s.hidden ? "h" : "4h") +
                       " columns are split over the tp group");
    if (s.global_rows() % (s.grid.dp * s.micro_batches) != 0)
      throw UsageError("--batch × --seq = " + std::to_string(s.global_rows()) + " tokens do not divide into --dp " +
                       std::to_string(s.grid.dp) + " × --micro-batches " + std::to_string(s.micro_batches) +
                       " equal micro-batches");
    return;
  }
  // The GPT's micro-batches are whole sequences (attention runs within a sequence).
  if (s.batch % (s.grid.dp * s.micro_batches) != 0)
    throw UsageError("--batch " + std::to_string(s.batch) + " sequences do not divide into --dp " +
                     std::to_string(s.grid.dp) + " × --micro-batches " + std::to_string(s.micro_batches) +
                     " micro-batches of whole sequences");
  const GptConfig micro{s.vocab, s.seq, s.hidden, s.heads, s.layers, s.micro_sequences()};
  if (const std::string problem = gpt_config_problem(micro, s.grid.tp, ex::TpMode::plain); !problem.empty())
    throw UsageError("--model gpt on --tp " + n_tp + ": " + problem + "; change --heads, --hidden, --vocab or --tp");
}

// Before anything is allocated, what the run holds on all ranks together: every rank's
// stage (params, grads, AdamW: 16 B per parameter; M micro-batches of activations) and,
// with --check on, the 1-rank model.
double estimated_bytes(const GridSettings& s, int ranks) {
  const double h = s.hidden, T = s.grid.tp, blocks = std::ceil(double(s.layers) / s.grid.pp), G = s.global_rows();
  if (s.model == GridModelKind::mlp) {  // per block 2·h·ff parameters; x, z, a (and the stack's c_proj output)
    const double ff = s.mlp_shape(0).ff(), extra = ff == h ? h : 0;
    const double rank_bytes = 16 * blocks * 2 * h * ff / T +
                              4.0 * s.micro_batches * blocks * s.micro_rows() * (h + 2 * ff / T + extra) + 8 * G * h;
    const double reference = s.check ? 16.0 * s.layers * 2 * h * ff + 4.0 * G * s.layers * (h + 2 * ff + extra) : 0;
    return ranks * (rank_bytes + reference);
  }
  const double embeddings = (s.vocab + s.seq) * h, block = 12 * h * h + 13 * h;
  const GptConfig micro{s.vocab, s.seq, s.hidden, s.heads, s.layers, s.micro_sequences()};
  const GptSpan most{0, int(blocks) - 1, true, true};  // a stage with both ends: an upper bound
  const double rank_bytes = 16 * (blocks * block + embeddings) / T +
                            s.micro_batches * gpt_activation_bytes(micro, s.grid.tp, ex::TpMode::plain, most) +
                            8 * G * h;
  const GptConfig whole{s.vocab, s.seq, s.hidden, s.heads, s.layers, s.batch};
  const double reference =
      s.check ? 16 * (s.layers * block + embeddings) + gpt_activation_bytes(whole, 1, ex::TpMode::plain) : 0;
  return ranks * (rank_bytes + reference);
}

}  // namespace

GridSettings grid_settings(const LabConfig& cfg, int ranks) {
  const OptionTable<GridSettings>& table = grid_option_table();
  GridSettings s = table.parse(cfg.options);
  if (s.model == GridModelKind::gpt && table.given(cfg.options, &GridSettings::mlp_form))
    throw UsageError("--mlp-form chooses the MLP's form: drop it, or use --model mlp");
  if (s.mlp_form == TpMlpForm::layer_stack) s.adamw.eps = 1e-8f;  // the MLP labs' AdamW (zero_lab.h, ddp_lab.h)
  if (s.model == GridModelKind::mlp &&
      (table.given(cfg.options, &GridSettings::heads) || table.given(cfg.options, &GridSettings::vocab)))
    throw UsageError("--heads and --vocab are GPT options: add --model gpt");
  if (s.model == GridModelKind::mlp && table.given(cfg.options, &GridSettings::recompute))
    throw UsageError("--recompute is the GPT's (its attention and layers are what it recomputes): add --model gpt");
  if (s.grid.dp == 0) {  // as many replicas as the ranks hold
    if (ranks % (s.grid.tp * s.grid.pp) != 0)
      throw UsageError("--ranks " + std::to_string(ranks) +
                       " is not a multiple of tp·pp = " + std::to_string(s.grid.tp * s.grid.pp) +
                       ": give --dp, or --ranks a multiple of tp·pp (the product dp·tp·pp)");
    s.grid.dp = ranks / (s.grid.tp * s.grid.pp);
  }
  const std::string grid =
      "dp " + std::to_string(s.grid.dp) + " × tp " + std::to_string(s.grid.tp) + " × pp " + std::to_string(s.grid.pp);
  if (s.grid.size() != ranks)
    throw UsageError("the grid " + grid + " needs " + std::to_string(s.grid.size()) + " ranks, but --ranks is " +
                     std::to_string(ranks) + ": make --ranks the product dp·tp·pp");
  if (s.layers < s.grid.pp)
    throw UsageError("--layers " + std::to_string(s.layers) + " cannot fill --pp " + std::to_string(s.grid.pp) +
                     " stages: every stage needs a block; raise --layers or lower --pp");
  check_model(s);
  require_checkpoint_options(table, cfg.options, s, true, "");
  if (s.checkpoint_every > 0 || !s.resume.empty()) {
    if (s.compute_us > 0)
      throw UsageError("--compute-us emulates the compute, so no weights change to save or resume: drop one of them");
  }
  pipeline::validate(s.schedule, {s.grid.pp, s.micro_batches, 1});
  require_memory(estimated_bytes(s, ranks), "--layers, --hidden, --batch, --seq (or --check off)");
  return s;
}

namespace {

// Axes 0..2 are dp, tp, pp; 3 is the GPT's embedding group (its own row, P > 1 only).
std::string axis_name(int i) { return i == 0 ? "dp" : i == 1 ? "tp" : i == 2 ? "pp" : "embedding"; }
double axis_of(const AxisBytes& b, int i) { return i == 0 ? b.dp : i == 1 ? b.tp : i == 2 ? b.pp : b.embedding; }

void add_bytes_rows(Report& rep, const GridSettings& s, const GridMeasurement& m) {
  const bool gpt = s.model == GridModelKind::gpt;
  const char* formula[] = {"2(D−1)/D·4Ψ + loss",
                           !gpt ? "4·nb·M·(T−1)/T·4Rh"
                           : s.recompute == theory::Recompute::full
                               ? "M·(5nb+ends)·2(T−1)/T·4Rh + CE"  // + recomputation's g
                               : "M·(4nb+ends)·2(T−1)/T·4Rh + CE",
                           "M·4Rh each way", "wte's grad 4·Vh/T"};
  const int axes = gpt && s.grid.pp > 1 ? 4 : 3;
  double worst = 0;
  for (int a = 0; a < axes; ++a) {
    std::size_t top = 0;  // the rank that sends the most on this axis
    for (std::size_t r = 0; r < m.ranks.size(); ++r) {
      if (axis_of(m.ranks[r].bytes, a) > axis_of(m.ranks[top].bytes, a)) top = r;
      worst = std::max(worst, std::fabs(axis_of(m.ranks[r].bytes, a) - axis_of(m.ranks[r].predicted, a)));
    }
    rep.add("grid." + axis_name(a) + "_bytes",
            axis_name(a) + " bytes per step (rank " + std::to_string(top) + ": most)", axis_of(m.ranks[top].bytes, a),
            "B")
        .predict(axis_of(m.ranks[top].predicted, a), formula[a]);
  }
  rep.check("grid.bytes_vs_formula", "bytes: worst rank and axis vs formula", worst, 0.0, "B").from("exact");
}

void add_memory_rows(Report& rep, const GridMeasurement& m) {
  double opt_diff = 0, act_diff = 0, most_act = 0, most_opt = 0;
  for (const GridRankFigures& f : m.ranks) {
    opt_diff = std::max(opt_diff, std::fabs(f.optimizer_bytes - f.predicted_optimizer));
    act_diff = std::max(act_diff, std::fabs(f.activation_peak - f.predicted_activation));
    most_act = std::max(most_act, f.activation_peak), most_opt = std::max(most_opt, f.optimizer_bytes);
  }
  const GridRankFigures& r0 = m.ranks[0];
  rep.add("grid.param_bytes", "rank 0: parameters", r0.param_bytes, "B");
  rep.add("grid.grad_bytes", "rank 0: gradients (+ ZeRO-1's shard)", r0.grad_bytes, "B");
  rep.add("grid.optimizer_bytes", "optimizer state, most on a rank", most_opt, "B");
  rep.check("grid.optimizer_vs_formula", "optimizer: worst rank vs formula", opt_diff, 0.0, "B")
      .from("8·Ψ_rank (ZeRO-1: /D)");
  rep.add("grid.activation_bytes", "activations, most on a rank (peak)", most_act, "B");
  rep.check("grid.activation_vs_formula", "activations: worst rank vs formula", act_diff, 0.0, "B")
      .from("in flight × one");
  add_device_memory_check(rep, "grid.", m.device_vs_tracker);
}

}  // namespace

void add_grid_rows(Report& rep, const GridSettings& s, const GridMeasurement& m) {
  if (m.checkpoints.resumed_from < 0)
    rep.add("grid.loss_first", "loss, first step", m.first_loss, "");  // else: not run
  rep.add("grid.loss_last", "loss, last step", m.last_loss, "");
  add_checkpoint_report(rep, "grid.", m.checkpoints);
  if (m.max_loss_diff >= 0)
    rep.check("grid.loss_diff_vs_one_rank", "max loss diff vs 1 rank, any step", m.max_loss_diff, 0.0, "", 1e-5)
        .from("fp32 sums in another order");
  if (m.max_weight_diff >= 0)
    rep.check("grid.weight_diff_vs_one_rank", "max weight diff vs 1 rank after the steps", m.max_weight_diff, 0.0, "",
              0.02 * s.adamw.lr * s.steps)
        .from("0.02·lr per step");
  add_bytes_rows(rep, s, m);
  add_memory_rows(rep, m);
  if (m.activation)  // a micro-batch's b sequences, on the tp group's T ranks
    add_gpt_activation_rows(rep, "grid.", GptConfig{s.vocab, s.seq, s.hidden, s.heads, s.layers, s.micro_sequences()},
                            s.grid.tp, ex::TpMode::plain, s.recompute, *m.activation);
  const int P = s.grid.pp, M = s.micro_batches;
  rep.add("grid.bubble", "pipeline bubble: idle share of the step", m.bubble, "")
      .predict(pipeline::bubble_idle_share(P, M), "(P−1)/(M+P−1)");
  rep.add("grid.step_time", "step time", 0, "s").over(m.step);
  add_planner_memory_rows(rep, s, m);  // a section of its own: memory by tag vs dtlab plan's model
}

namespace {

void add_gpt_notes(Report& rep, const GridSettings& s) {
  const int b = s.micro_sequences();
  rep.notes.push_back("GPT: a micro-batch is b = B/(D·M) = " + std::to_string(b) +
                      (b == 1 ? " whole sequence" : " whole sequences") +
                      "; the first stage also holds wte and wpe, the last ln_f and the LM head. tp per micro-batch: 4 "
                      "all-reduces of R·h per layer, one more on each end stage (embedding g, head f), 3 of R floats "
                      "for the vocab-parallel cross-entropy" +
                      (s.recompute == theory::Recompute::full ? "; full recomputation reruns each layer's attention g "
                                                                "(one more all-reduce per layer)."
                                                              : "."));
  if (s.grid.pp > 1)
    rep.notes.push_back(
        "Tied head (Megatron-LM's embedding group): the last stage keeps its own copy of wte, drawn "
        "identical; after backward the first and last stage of each pipeline all-reduce its gradient, "
        "so both copies take the same step (row 'embedding bytes').");
}

std::string model_text(const GridSettings& s) {
  char text[120];
  if (s.model == GridModelKind::mlp)
    std::snprintf(text, sizeof text, "MLP %s%d blocks h %d", s.mlp_form == TpMlpForm::layer_stack ? "stack, " : "",
                  s.layers, s.hidden);
  else
    std::snprintf(text, sizeof text, "GPT %d layers h %d, %d heads, vocab %d, b %d × s %d", s.layers, s.hidden, s.heads,
                  s.vocab, s.batch, s.seq);
  return text;
}

void describe(Report& rep, const GridSettings& s) {
  char text[240];
  std::snprintf(text, sizeof text, "DP(%d)-TP(%d)-PP(%d)%s · %s · %d tokens/step in %d micro-batches", s.grid.dp,
                s.grid.tp, s.grid.pp, s.zero == GridZero::optimizer_states ? " + ZeRO-1" : "", model_text(s).c_str(),
                s.global_rows(), s.micro_batches);
  rep.setup.push_back(text);
  rep.setup.push_back(std::string(pipeline::schedule_name(s.schedule)) + ", fp32, " + std::to_string(s.steps) +
                      " AdamW steps");
  rep.notes.push_back(
      "Ranks: tp fastest, then dp, then pp (Megatron-LM): rank = pp·(D·T) + dp·T + tp. Bytes per axis are "
      "what each rank's dp and tp collectives send on a ring and its pp sends, from its own events.");
  if (s.compute_us > 0)
    rep.notes.push_back("Each F lasts " + format_number(s.compute_us) +
                        " µs and each B twice that (the real compute "
                        "runs inside): the bubble on a clean timeline, however many ranks share the cores.");
  rep.notes.push_back(
      "Ψ_stage: the parameters a rank holds (its stage's blocks, 1/T of each). R = tokens / (D·M) per "
      "micro-batch. ZeRO-1 pads Ψ_stage to D·⌈Ψ_stage/D⌉.");
  if (s.model == GridModelKind::gpt) add_gpt_notes(rep, s);
}

}  // namespace

Report run_grid_lab(Comm& comm, const LabConfig& cfg) {
  if (!comm.trace()) throw Error("the grid lab measures from trace events; run it with tracing on");
  const GridSettings s = grid_settings(cfg, comm.size());
  kernels::use_one_blas_thread();
  if (comm.rank() == 0)
    comm.trace()->set_meta(MetaKey::grid, "{\"dp\":" + std::to_string(s.grid.dp) + ",\"tp\":" +
                                              std::to_string(s.grid.tp) + ",\"pp\":" + std::to_string(s.grid.pp) + "}");
  Report rep = start_report(comm, cfg, "grid");
  describe(rep, s);
  const GridMeasurement m = run_grid(comm, cfg, s);
  add_grid_rows(rep, s, m);
  return rep;
}

}  // namespace dtl
