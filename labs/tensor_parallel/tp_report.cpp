// The tensor-parallel lab's settings, report rows and registry entry (see tp_lab.cpp).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/theory/collectives.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "labs/measure.h"
#include "labs/report_format.h"
#include "labs/tensor_parallel/tp_lab.h"
#include "labs/train/gpt.h"

namespace dtl {

namespace {

std::string mode_name(ex::TpMode m) { return m == ex::TpMode::plain ? "tp" : "tp+sp"; }

// `what` names the value as the user gave it ("--seq 30", "4 × --hidden 64 = 256").
void require_divisible(int value, int by, const std::string& what, const std::string& why) {
  if (by <= 0 || value % by != 0) throw UsageError(what + " is not divisible by " + std::to_string(by) + ": " + why);
}

}  // namespace

TpSettings tp_settings(const LabConfig& cfg, int T) {
  const OptionTable<TpSettings>& table = tp_option_table();
  TpSettings s = table.parse(cfg.options);
  tokens_per_step(s.batch, s.seq);  // TpSettings::rows() counts them in an int
  if (s.tp != 0 && s.tp != T)
    throw UsageError("--tp " + std::to_string(s.tp) + " but --ranks " + std::to_string(T) +
                     ": every rank is one tensor-parallel rank; give --ranks " + std::to_string(s.tp));
  const TpSequenceChoice sp = s.sequence_parallel;
  if (sp != TpSequenceChoice::on) s.modes.push_back(ex::TpMode::plain);
  if (sp != TpSequenceChoice::off) s.modes.push_back(ex::TpMode::sequence_parallel);
  require_checkpoint_options(table, cfg.options, s, s.modes.size() == 1,
                             "give --sequence-parallel off or on (not both)");
  const std::string tp = "--tp (--ranks) " + std::to_string(T);
  require_divisible(4 * s.hidden, T, "4 × --hidden " + std::to_string(s.hidden) + " = " + std::to_string(4 * s.hidden),
                    "the MLP's 4h columns are split over " + tp);
  if (sp != TpSequenceChoice::off)
    require_divisible(s.seq, T, "--seq " + std::to_string(s.seq),
                      "sequence parallelism splits the sequence over " + tp);
  if (s.model == TpModelKind::gpt) {
    for (ex::TpMode m : s.modes) {
      const std::string problem =
          gpt_config_problem(GptConfig{s.vocab, s.seq, s.hidden, s.heads, s.layers, s.batch}, T, m);
      if (!problem.empty())  // the model's own rules (labs/train/gpt.h), in its words
        throw UsageError("--model gpt on " + tp + ": " + problem +
                         "; change --heads, --hidden, --vocab, --seq or --ranks");
    }
  } else {
    if (table.given(cfg.options, &TpSettings::heads) || table.given(cfg.options, &TpSettings::vocab))
      throw UsageError("--heads and --vocab are GPT options: add --model gpt");
    if (table.given(cfg.options, &TpSettings::recompute))
      throw UsageError("--recompute is the GPT's (its attention and layers are what it recomputes): add --model gpt");
  }
  const double R = s.rows(), h = s.hidden;
  const double per_rank =
      4.0 * (s.layers * (12 * h * h / T + 6 * R * h + 2 * R * 4 * h / T) + 4 * R * h) +
      (s.model == TpModelKind::gpt ? 4.0 * (R * s.vocab / T + 4 * s.batch * s.seq * double(s.seq) * s.heads / T) : 0);
  require_memory(T * per_rank * (s.check ? 2 : 1), "--layers, --hidden, --seq, --batch (or --check off)");
  return s;
}

namespace {

// The gradients' bound against one rank: fp32 sum order, which the row-parallel all-reduces
// change, moves a gradient by about what a one-ulp change of every weight moves it (the
// reference measures that: OneRank::grad_noise_floor). Ten times it, never below the 1e-4
// that held on every shallow model; a real fault (a missing all-reduce) is off by O(1).
double grad_tolerance(double noise_floor) { return std::max(1e-4, 10 * noise_floor); }

// What the visualizer's split panel draws (meta "tp_split"): the weight matrices of one
// block and the embedding, each with its full shape and how it is cut over the T ranks —
// "column" (rows of W [out × in] by rank), "qkv_column" (the Q, K and V blocks each by
// heads), "row" (columns by rank), "vocab_rows", "replicated" — and where f and g sit.
nlohmann::json split_meta(const TpSettings& s, int T) {
  const int h = s.hidden;
  nlohmann::json t = nlohmann::json::array();
  auto add = [&](const std::string& name, int rows, int cols, const char* split, const char* region) {
    t.push_back({{"name", name}, {"rows", rows}, {"cols", cols}, {"split", split}, {"region", region}});
  };
  if (s.model == TpModelKind::gpt) {
    add("wte", s.vocab, h, "vocab_rows", "embedding");
    add("h.0.ln_1.weight", 1, h, "replicated", "attention");
    add("h.0.attn.c_attn.weight", 3 * h, h, "qkv_column", "attention");
    add("h.0.attn.c_proj.weight", h, h, "row", "attention");
    add("h.0.ln_2.weight", 1, h, "replicated", "mlp");
  }
  add("h.0.mlp.c_fc.weight", 4 * h, h, "column", "mlp");
  add("h.0.mlp.c_proj.weight", h, 4 * h, "row", "mlp");
  return {{"T", T},
          {"model", s.model == TpModelKind::gpt ? "gpt" : "mlp"},
          {"layers", s.layers},
          {"hidden", h},
          {"heads", s.heads},
          {"vocab", s.vocab},
          {"rows", s.rows()},
          {"tensors", t},
          {"operators",
           "f before each column-parallel layer (identity forward, all-reduce backward); g after each "
           "row-parallel one (all-reduce forward, identity backward)"}};
}

}  // namespace

// The curriculum's milestone (seed 003): the forward pass's all-reduces, their bytes, their
// time on the emulated link and the forward compute beside them. Plain tensor parallelism.
void add_forward_rows(Report& rep, const TpSettings& s, const TpMeasurement& m, int T, const LinkSpec& link) {
  const std::string n = "tp.";
  const double k = m.regions, L = s.layers, payload = 4.0 * s.rows() * s.hidden;
  const BlockCollectives& c = m.comm;
  rep.check(n + "fwd_all_reduces", "forward all-reduces per step (all layers)", c.all_reduce_fwd, k * L, "")
      .from(k > 1 ? "2L" : "L");
  rep.check(n + "fwd_all_reduce_bytes", "forward all-reduce bytes per step (fp32)", c.fwd_payload, k * L * payload, "B")
      .from(k > 1 ? "2L·b·s·h·4" : "L·b·s·h·4");
  rep.add(n + "fwd_all_reduce_bytes_16bit", "the same at 2 bytes per value (the course text's fp16)", c.fwd_payload / 2,
          "B")
      .predict(k * L * payload / 2, k > 1 ? "2L·b·s·h·2" : "L·b·s·h·2");
  const double compute = std::max(0.0, c.fwd_span_seconds - c.fwd_comm_seconds);
  rep.add(n + "fwd_compute", "forward compute in the blocks (without the all-reduces)", compute, "s");
  // A collective's span also holds the wait for the slowest rank to arrive: the α–β time
  // is a lower bound, not a check.
  ReportRow& comm_time =
      rep.add(n + "fwd_comm", "forward all-reduces' time (with waits for other ranks)", c.fwd_comm_seconds, "s");
  if (!link.active()) return;
  const theory::Link l{link.alpha_s(), link.beta_Bps()};
  const double on_link = k * L * theory::library_collective_time(CollectiveKind::all_reduce, T, payload, l);
  comm_time.predict(on_link, link.name + ", α–β");
  // Where the course text's ~6% comes from (Phase V — Distributed Training): its bytes (2 per value)
  // on its link against its 50 ms GPU forward.
  const double seed_comm = k * L * theory::library_collective_time(CollectiveKind::all_reduce, T, payload / 2, l),
               seed_forward = 50e-3;
  char text[512];
  std::snprintf(
      text, sizeof text,
      "Phase V — Distributed Training's ~6%%: %d all-reduces of %s (2 bytes per value) on %s take %s; "
      "against its 50 ms GPU forward that is %.1f%%. This run's forward computed %s on CPU cores, so the same "
      "transfers would be %.2g%% of it.",
      int(k * L), format_value(payload / 2, "B").c_str(), link.name.c_str(), format_value(seed_comm, "s").c_str(),
      100 * seed_comm / seed_forward, format_value(compute, "s").c_str(),
      compute > 0 ? 100 * seed_comm / compute : 0.0);
  rep.notes.push_back(text);
}

namespace {

// Full recomputation reruns the forward up to GELU: the attention's g (all-reduce, or under
// sequence parallelism its reduce-scatter) and the f before c_attn and c_fc (under sequence
// parallelism two all-gathers; plain f forward is the identity).
void add_recomputed_collective_rows(Report& rep, const std::string& n, bool sp, const BlockCollectives& c, double L) {
  if (!sp) {
    rep.check(n + "all_reduce_per_layer_again", "all-reduces per layer, recomputation (g)", c.all_reduce_again / L, 1.0,
              "")
        .from("attention's g; the MLP stops at GELU");
    return;
  }
  rep.check(n + "all_gather_per_layer_again", "all-gathers per layer, recomputation (f)", c.all_gather_again / L, 2.0,
            "")
      .from("before c_attn and c_fc");
  rep.check(n + "reduce_scatter_per_layer_again", "reduce-scatters per layer, recomputation (g)",
            c.reduce_scatter_again / L, 1.0, "")
      .from("attention's g; the MLP stops at GELU");
}

// The blocks' collectives per layer and their payload: f and g as all-reduces (Megatron's
// tensor parallelism) or as all-gathers and reduce-scatters (with sequence parallelism).
void add_collective_count_rows(Report& rep, const std::string& n, const TpMeasurement& m, double L, double k,
                               double payload, int T) {
  const bool sp = m.mode == ex::TpMode::sequence_parallel;
  const BlockCollectives& c = m.comm;
  if (T > 1 && !sp) {
    rep.check(n + "all_reduce_per_layer_fwd", "all-reduces per layer, forward (g)", c.all_reduce_fwd / L, k, "")
        .from(k > 1 ? "attention + MLP" : "one g");
    rep.check(n + "all_reduce_per_layer_bwd", "all-reduces per layer, backward (f)", c.all_reduce_bwd / L, k, "")
        .from(k > 1 ? "attention + MLP" : "one f");
    rep.check(n + "payload_per_collective", "bytes per all-reduce", c.largest_payload, payload, "B").from("b·s·h·4");
  } else if (T > 1) {
    rep.check(n + "all_gather_per_layer_fwd", "all-gathers per layer, forward (f)", c.all_gather_fwd / L, k, "")
        .from("f");
    rep.check(n + "reduce_scatter_per_layer_fwd", "reduce-scatters per layer, forward (g)", c.reduce_scatter_fwd / L, k,
              "")
        .from("g");
    rep.check(n + "reduce_scatter_per_layer_bwd", "reduce-scatters per layer, backward (f)", c.reduce_scatter_bwd / L,
              k, "")
        .from("f");
    rep.check(n + "all_gather_per_layer_bwd", "all-gathers per layer, backward (g, re-gather)", c.all_gather_bwd / L,
              k * (m.regathers ? 2 : 1), "")
        .from(m.regathers ? "g + input again" : "g");
    rep.check(n + "payload_per_collective", "bytes per all-gather / reduce-scatter (whole)", c.largest_payload, payload,
              "B")
        .from("b·s·h·4");
  }
}

}  // namespace

void add_tp_rows(Report& rep, const TpSettings& s, const TpMeasurement& m, int T) {
  const std::string n = mode_name(m.mode) + ".";
  const bool sp = m.mode == ex::TpMode::sequence_parallel;
  const double L = s.layers, k = m.regions, payload = 4.0 * s.rows() * s.hidden;  // b·s·h fp32 values
  if (m.checkpoints.resumed_from < 0) rep.add(n + "loss_first", "loss, first step", m.first_loss, "");  // else: not run
  rep.add(n + "loss_last", "loss, last step", m.last_loss, "");
  add_checkpoint_report(rep, n, m.checkpoints);
  if (m.max_grad_rel_diff >= 0) {
    rep.check(n + "loss_vs_one_rank", "|loss − 1 rank's|, first step", m.loss_diff, 0.0, "", 1e-5)
        .from("fp32 sum order");
    rep.check(n + "grad_diff_vs_one_rank", "max gradient diff vs 1 rank (relative)", m.max_grad_rel_diff, 0.0, "",
              grad_tolerance(m.grad_noise_floor))
        .from("max(1e-4, 10 × 1-ulp floor)");
    rep.add(n + "first_update_vs_one_rank", "AdamW's first update: largest difference vs 1 rank (÷ lr)",
            m.first_update_diff, "")
        .source = "g/(|g|+ε) of both runs' gradients";
  }
  // (a resumed run compares its final weights too: one rank trains all the steps from step 0)
  if (m.max_weight_diff >= 0) {
    // AdamW moves a weight by about lr·sign(g) per step whatever |g|: a gradient near zero
    // that differs in its last bits may move it the other way (192 layers of hidden 4: 0.038·lr
    // after one step), so the bound is lr times the run's own first-update difference (0 in a
    // resumed run, whose first step is not compared: the small models' 0.02·lr per step).
    rep.check(n + "weight_diff_vs_one_rank", "max weight diff vs 1 rank after the steps", m.max_weight_diff, 0.0, "",
              adam_weight_tolerance(s.adamw.lr, s.steps, m.first_update_diff))
        .from("lr·(Δ first update + 0.02) per step");
  }
  add_collective_count_rows(rep, n, m, L, k, payload, T);
  const BlockCollectives& c = m.comm;
  const bool again = s.recompute == theory::Recompute::full && T > 1;
  if (again) add_recomputed_collective_rows(rep, n, sp, c, L);
  // A ring all-reduce sends 2(T−1)/T of the buffer per rank; an all-gather or a
  // reduce-scatter (T−1)/T: under sequence parallelism the pair costs one all-reduce.
  const double share = double(T - 1) / T, regather = sp && m.regathers ? k * L * share * payload : 0;
  const double recomputed = again ? L * (sp ? 3 : 2) * share * payload : 0;
  rep.check(n + "ring_bytes_per_step", "bytes per rank per step in the blocks (ring)", c.ring_bytes,
            2 * k * L * 2 * share * payload + regather + recomputed, "B")
      .from(std::string(regather > 0 ? "4kL·(T−1)/T·bsh·4 + re-gathers" : "2kL · 2(T−1)/T·bsh·4") +
            (recomputed > 0 ? " + recomputation's" : ""));
  rep.add(n + "collectives_outside_blocks", "collectives outside the blocks (loss, embedding)", c.outside_blocks, "");
  if (sp && m.partial_replicated > 0)  // the extra all-reduce sequence parallelism needs
    rep.add(n + "sequence_partial_grads", "LayerNorm + wpe gradients all-reduced (bytes)",
            4.0 * double(m.partial_replicated), "B")
        .predict(4.0 * ((4.0 * s.layers + 2) * s.hidden + double(s.seq) * s.hidden), "((4L+2)h + s·h)·4");
  rep.check(n + "activation_bytes", "activation memory per rank", m.activation_peak, m.predicted_activation, "B")
      .from(m.activation_formula);
  if (m.activation)
    add_gpt_activation_rows(rep, n, GptConfig{s.vocab, s.seq, s.hidden, s.heads, s.layers, s.batch}, T, m.mode,
                            s.recompute, *m.activation);
  rep.add(n + "param_bytes", "parameter memory per rank", m.param_bytes, "B");
  add_device_memory_check(rep, n, m.device_vs_tracker);
  rep.add(n + "step_time", "step time (forward + backward)", 0, "s").over(m.step);
  rep.add(n + "comm_time", "of which the blocks' collectives", 0, "s").over(m.comm_time);
}

void describe_tp_setup(Report& rep, const TpSettings& s, const LabConfig& cfg) {
  char shape[200];
  if (s.model == TpModelKind::mlp)
    std::snprintf(shape, sizeof shape, "MLP: %d blocks h→4h→h, h = %d, %d tokens (b %d × s %d)", s.layers, s.hidden,
                  s.rows(), s.batch, s.seq);
  else
    std::snprintf(shape, sizeof shape, "GPT: %d layers, h %d, %d heads, vocab %d, b %d × s %d", s.layers, s.hidden,
                  s.heads, s.vocab, s.batch, s.seq);
  rep.setup.push_back(shape);
  if (rep.ranks == 1)
    rep.notes.push_back(
        "One rank: the whole model, nothing to communicate (the rows counting collectives need T ≥ 2).");
  rep.setup.push_back("T = " + std::to_string(rep.ranks) + ", fp32, " + std::to_string(s.steps) + " AdamW steps");
  rep.notes.push_back(
      "Megatron-LM's split: c_fc (and attention's Q, K, V by heads) column-parallel after f, c_proj "
      "row-parallel before g. f: identity forward, all-reduce backward; g: all-reduce forward, identity "
      "backward. Sequence parallel: f = all-gather / reduce-scatter, g = reduce-scatter / all-gather.");
  rep.notes.push_back(
      "Counterparts: g's forward all-reduce after c_proj is f's backward all-reduce before c_fc (or "
      "c_attn), the same b·s·h values; under sequence parallelism each forward all-gather (f) has a "
      "backward reduce-scatter and each forward reduce-scatter (g) a backward all-gather.");
  if (s.model == TpModelKind::gpt)
    rep.notes.push_back(
        "Sequence parallelism: each rank's LayerNorms and position embedding see only its s/T positions, "
        "so their gradients are partial sums: one all-reduce of them after backward (the row above).");
  if (s.model == TpModelKind::mlp)
    rep.notes.push_back(
        "Under sequence parallelism backward gathers c_fc's input again (Megatron-LM's choice): one more "
        "all-gather per block for 1/T of the residual stream's memory.");
  rep.notes.push_back(
      "Times: the median over the steps after the first, min–max beside it." +
      std::string(cfg.link.active() ? " Collectives last at least their time on the emulated link." : ""));
}

Report run_tp_lab(Comm& comm, const LabConfig& cfg) {
  const int T = comm.size();
  const TpSettings s = tp_settings(cfg, T);
  kernels::use_one_blas_thread();  // the ranks are the parallelism
  Report rep = start_report(comm, cfg, "tensor_parallel");
  if (comm.trace() && comm.rank() == 0) comm.trace()->set_meta(MetaKey::tp_split, split_meta(s, T).dump());
  describe_tp_setup(rep, s, cfg);
  const OneRank ref = s.check ? one_rank_reference(comm, s, rank_device(cfg.device, comm)) : OneRank{};
  for (ex::TpMode mode : s.modes) {
    const TpMeasurement m = run_tp_mode(comm, cfg, s, mode, ref);
    add_tp_rows(rep, s, m, T);
    if (mode == ex::TpMode::plain && T > 1) add_forward_rows(rep, s, m, T, cfg.link);
  }
  if (s.modes.size() > 1) rep.columns = {"tp", "tp+sp"};
  return rep;
}

}  // namespace dtl
