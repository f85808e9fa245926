// The context-parallel lab's report rows (cp_lab.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/util/units.h"
#include "labs/context_parallel/cp_attention.h"
#include "labs/context_parallel/cp_lab.h"

namespace dtl {

namespace {

const char* bytes_formula(cp::CpAlgo a, bool backward) {
  switch (a) {
    case cp::CpAlgo::ring: return backward ? "(2P−1)·n·B·2h·4: K/V P−1 hops, dK/dV P" : "(P−1)·n·B·2h·4: P−1 K/V hops";
    case cp::CpAlgo::all_gather:
      return backward ? "(P−1)·n·B·2h·4: reduce-scatter dK/dV" : "(P−1)·n·B·2h·4: all-gather K/V";
    case cp::CpAlgo::ulysses: return backward ? "(P−1)/P·n·B·4h·4: dout, dqkv" : "(P−1)/P·n·B·4h·4: qkv, out";
  }
  return "";
}

// Causal (query, key) pairs of one head and sequence each rank computes: its positions'
// Σ(p+1) for ring and all-gather (its queries against every earlier key); Ulysses: every
// position of the sequence for its A/P heads, S(S+1)/2 · (A/P)/A of the work per head.
cp::CpBalance pairs_of(cp::CpAlgo a, const CpSettings& s, int P) {
  if (a != cp::CpAlgo::ulysses) return cp::cp_balance(s.split, s.seq, P);
  cp::CpBalance b;
  b.pairs.assign(std::size_t(P), std::int64_t(s.seq) * (s.seq + 1) / 2 / P);
  return b;
}

void add_equivalence_rows(Report& rep, const std::string& c, const CpSettings& s, const CpMeasurement& m) {
  if (m.checkpoints.resumed_from < 0) rep.add(c + "loss_first", "loss, first step", m.first_loss, "");  // else: not run
  rep.add(c + "loss_last", "loss, last step", m.last_loss, "");
  add_checkpoint_report(rep, c, m.checkpoints);
  if (m.max_grad_rel_diff >= 0) {
    rep.check(c + "loss_vs_one_rank", "|loss − 1 rank's|, first step", m.loss_diff, 0, "",
              1e-5 * std::max(1.0, double(std::fabs(m.first_loss))))
        .from("the plain GPT, whole batch");
    rep.check(c + "grad_vs_one_rank", "max gradient diff vs 1 rank (÷ tensor's max)", m.max_grad_rel_diff, 0, "", 1e-5)
        .from("fp32 sum order");
  }
  if (m.max_weight_diff < 0) return;  // (a resumed run's too: one rank trains all the steps from step 0)
  rep.check(c + "weights_vs_one_rank", "max weight diff vs 1 rank after the steps", m.max_weight_diff, 0, "",
            0.02 * double(s.adamw.lr) * s.steps)
      .from("0.02·lr per step");
}

void add_traffic_rows(Report& rep, const std::string& c, const CpSettings& s, const CpMeasurement& m, int P) {
  const cp::CpBytes want = cp::cp_bytes_per_rank(m.algo, s.layer(), P);
  rep.check(c + "bytes_fwd_per_layer", "bytes per rank per layer, forward (trace, farthest call)", m.fwd_bytes,
            double(want.forward), "B")
      .from(bytes_formula(m.algo, false));
  rep.check(c + "bytes_bwd_per_layer", "bytes per rank per layer, backward (trace, farthest call)", m.bwd_bytes,
            double(want.backward), "B")
      .from(bytes_formula(m.algo, true));
  rep.check(c + "attention_calls", "attention calls per rank (forward)", m.calls, double(s.layers) * m.steps_run, "")
      .from("L per step");
  if (m.algo != cp::CpAlgo::ring || P == 1) return;
  // The K/V hop of step t is posted before block t is computed: what the block does not
  // hide is the wait after it. Backward's dK/dV hop carries the block's result: all exposed.
  rep.add(c + "ring_hop_time", "K/V hop transfers per step (rank mean)", m.hop_seconds, "s");
  rep.add(c + "ring_exposed_time", "of which exposed: waited for after the block", m.exposed_seconds, "s");
  rep.add(c + "ring_overlapped_share", "K/V hop time hidden behind the blocks",
          m.hop_seconds > 0 ? 1 - m.exposed_seconds / m.hop_seconds : 0, "x");
  rep.add(c + "ring_dkv_time", "dK/dV hops per step (after their block: exposed)", m.dkv_seconds, "s");
}

void add_balance_rows(Report& rep, const std::string& c, const CpSettings& s, const CpMeasurement& m, int P) {
  const cp::CpBalance b = pairs_of(m.algo, s, P);
  const double top = double(*std::max_element(b.pairs.begin(), b.pairs.end()));
  double mean = 0;
  for (std::int64_t p : b.pairs) mean += double(p) / P;
  const double d = double(s.hidden) / s.heads, heads = s.heads;  // Ulysses: A/P heads × S(S+1)/2 = A × pairs above
  rep.add(c + "pairs_busiest_rank", "causal pairs per head and sequence, busiest rank", top, "")
      .predict(mean, "mean: S(S+1)/2P");
  rep.add(c + "attention_flops_busiest_rank", "attention FLOPs per layer forward, busiest rank",
          4 * d * top * s.batch * heads, "")
      .predict(4 * d * mean * s.batch * heads, "4·d per pair, head and sequence (q·k, p·v)");
  rep.add(c + "attention_time_busiest_rank", "attention compute per step, busiest rank", m.attn_seconds_max, "s");
  rep.add(c + "attention_time_imbalance", "attention compute, busiest rank ÷ mean",
          m.attn_seconds_mean > 0 ? m.attn_seconds_max / m.attn_seconds_mean : 0, "x")
      .predict(top / mean, m.algo == cp::CpAlgo::ulysses ? "pairs: every rank the whole sequence" : "pairs max ÷ mean");
}

void add_memory_rows(Report& rep, const std::string& c, const CpSettings& s, const CpMeasurement& m, int P) {
  const double mine = cp_activation_bytes(m.algo, s, P), one = cp_activation_bytes(m.algo, s, 1);
  rep.check(c + "activation_per_rank", "activation memory per rank (peak, tracker)", m.activation_peak, mine, "B")
      .from("GPT on n·B rows, no S² + L·kept");
  if (m.one_rank_activation_peak < 0) return;
  rep.add(c + "activation_one_rank", "the same attention on 1 rank (peak)", m.one_rank_activation_peak, "B")
      .predict(one, "GPT on S·B rows + L·kept");
  const bool gathers = m.algo == cp::CpAlgo::all_gather;
  rep.check(c + "activation_vs_one_rank", "activation per rank ÷ 1 rank's",
            m.activation_peak / m.one_rank_activation_peak, mine / one, "x", 1e-9)
      .from(gathers ? "> 1/P: S·B·2h gathered K/V kept per layer" : "1/P = " + format_g(1.0 / P));
}

}  // namespace

void add_cp_rows(Report& rep, const CpSettings& s, const CpMeasurement& m, int P) {
  const std::string c = std::string(cp::cp_algo_name(m.algo)) + ".";
  add_equivalence_rows(rep, c, s, m);
  add_traffic_rows(rep, c, s, m, P);
  add_balance_rows(rep, c, s, m, P);
  add_memory_rows(rep, c, s, m, P);
  rep.add(c + "step_time", "step time (slowest rank)", 0, "s").over(m.step);
}

// The rows about the whole run: both splits' balance from their formulas, the dense one-rank memory.
void add_cp_run_rows(Report& rep, const CpSettings& s, const CpReference* ref, int P) {
  // The learner's merge where the run may never take it (empty sides, scores of ±300).
  rep.check("merge_vs_float64", "online_softmax_merge on crafted partials (empty sides, ±300)",
            cp::merge_error_on_crafted_partials(), 0, "", 1e-5)
      .from("float64 softmax");
  const cp::CpBalance contiguous = cp::cp_balance(cp::CpSplit::contiguous, s.seq, P);
  rep.add("balance_contiguous", "contiguous split: causal pairs, busiest rank ÷ mean", contiguous.max_over_mean, "x")
      .predict(double(2 * P - 1) / P, "(2P−1)/P for large n");
  if (s.seq % (2 * P) == 0)
    // A check: the learner's zigzag_partition against the split's theory (exactly equal work).
    rep.check("balance_zigzag", "zig-zag split: causal pairs, busiest rank ÷ mean",
              cp::cp_balance(cp::CpSplit::zigzag, s.seq, P).max_over_mean, 1, "x", 1e-12)
        .from("chunks i and 2P−1−i: equal");
  if (ref)
    rep.add("activation_one_rank_dense", "the plain GPT on 1 rank: activation peak (keeps B·A·S² probabilities)",
            ref->activation_peak, "B")
        .predict(gpt_activation_bytes(s.gpt(), 1, ex::TpMode::plain), "labs/train/gpt.h");
}

void describe_cp_setup(Report& rep, const CpSettings& s, int P) {
  char shape[200];
  std::snprintf(shape, sizeof shape, "GPT: %d layers, h %d, %d heads, vocab %d, B %d × S %d", s.layers, s.hidden,
                s.heads, s.vocab, s.batch, s.seq);
  rep.setup.push_back(shape);
  rep.setup.push_back("CP = " + std::to_string(P) + ", " + cp::cp_split_name(s.split) +
                      " split, n = S/P = " + std::to_string(s.seq / P) + " positions per rank");
  rep.setup.push_back("fp32, " + std::to_string(s.steps) + " AdamW steps");
  rep.notes.push_back(
      "Each rank holds n = S/P positions of every sequence (zig-zag: chunks i and 2P−1−i of 2P), the "
      "weights replicated; each block's attention runs across the ranks and the gradients are summed "
      "after backward (loss: the mean over all S·B tokens). 1 rank: the plain GPT on the whole batch.");
  rep.notes.push_back(
      "Bytes: each attention call's sends and collectives in the trace (a collective's P−1 blocks that "
      "leave the rank); ring: K/V chunk n·B·2h·4 per hop, dK/dV travel back with one more hop home; "
      "all-gather: gather K/V, reduce-scatter dK/dV; Ulysses: four all-to-alls of n·B·(3|1)h·4.");
  rep.notes.push_back(
      "Memory: the block keeps its qkv and output but no S² probabilities; the attention keeps its "
      "log-sum-exp per row and head (all-gather also the gathered K/V, Ulysses its heads' qkv and "
      "output over the sequence). Causal FLOPs: 4·d per (query, key ≤ query) pair per head forward, "
      "about 2.5× that backward (FlashAttention-2).");
  rep.notes.push_back(
      "Times: the attention's compute spans per step (the steps after the first); the ring's hops "
      "from their receives, exposed = after the block they overlapped ended.");
}

}  // namespace dtl
