// The context-parallel lab: the tiny GPT of labs/train/gpt.h with its sequences cut over the
// run's P ranks (Liu et al. 2023, Ring Attention; Llama 3's all-gather CP and zig-zag split,
// Dubey et al. 2024 §3.3.2; DeepSpeed-Ulysses, Jacobs et al. 2023), trained for a few AdamW
// steps beside the same model on one rank.
//
//   dtlab run context_parallel --ranks P [--algo ring|all-gather|ulysses|all] [--split contiguous|zigzag]
//                              [--layers L --hidden h --heads A --seq S --batch B --vocab V --steps N]
//
// Each rank holds S/P positions of every sequence and replicated weights; every block's
// attention runs across the ranks (cp_exchange.h), the gradients are summed after backward.
// Checks: the loss, every first-step gradient and the weights after the steps equal the plain
// GPT on one rank; each layer's bytes per rank, from the trace, equal cp_bytes_per_rank; the
// activation memory per rank (the tracker's peak) equals its formula, and against the same
// algorithm on one rank it is 1/P (all-gather: more, it keeps the gathered K/V).
#include "labs/context_parallel/cp_lab.h"

#include <string>

#include "core/error.h"
#include "core/util/units.h"
#include "kernels/cpu/kernels.h"
#include "labs/context_parallel/cp_lab_internal.h"
#include "labs/shared_options.h"

namespace dtl {

namespace {

EnumName<std::optional<cp::CpAlgo>> algo_word(cp::CpAlgo a) { return {a, cp::cp_algo_name(a)}; }
const EnumNames<std::optional<cp::CpAlgo>> kAlgoNames = {algo_word(cp::CpAlgo::ring),
                                                         algo_word(cp::CpAlgo::all_gather),
                                                         algo_word(cp::CpAlgo::ulysses),
                                                         {std::nullopt, "all"}};
const EnumNames<cp::CpSplit> kSplitNames = {{cp::CpSplit::contiguous, "contiguous"}, {cp::CpSplit::zigzag, "zigzag"}};

std::string n(double v) { return std::to_string(long(v)); }

}  // namespace

const OptionTable<CpSettings>& cp_option_table() {
  static const OptionTable<CpSettings> table = [] {
    OptionTable<CpSettings> t;
    t.choice("algo", &CpSettings::algo, std::optional<cp::CpAlgo>(cp::CpAlgo::ring), kAlgoNames,
             "how attention crosses the ranks: ring (K/V hops), all-gather (K/V gathered), ulysses (all-to-all to "
             "heads), or all three (a column each)")
        .choice("split", &CpSettings::split, cp::CpSplit::contiguous, kSplitNames,
                "how a sequence is cut: contiguous S/P blocks, or zigzag (2P chunks, rank i holds i and 2P-1-i)")
        .integer("layers", &CpSettings::layers, 2, 1, 32, "transformer layers L")
        .integer("hidden", &CpSettings::hidden, 32, 1, 1024, "hidden size h")
        .integer("heads", &CpSettings::heads, 4, 1, 64, "attention heads A")
        .integer("seq", &CpSettings::seq, 64, 1, 8192, "sequence length S (each rank holds S/P positions)")
        .integer("batch", &CpSettings::batch, 2, 1, 256, "sequences B per step (every rank holds part of each)")
        .integer("vocab", &CpSettings::vocab, 64, 2, 1 << 16, "vocabulary V")
        .integer("steps", &CpSettings::steps, 3, 1, 1000, "training steps (AdamW)")
        .choice("check", &CpSettings::check, true, kOnOffNames,
                "train the plain GPT on one rank too and compare the loss, every gradient, weight and the memory");
    add_checkpoint_rows(t);
    return t;
  }();
  return table;
}

namespace {

// The split and the heads must divide over the ranks; the GPT's own rules; options that
// would change nothing are refused.
void check_shape(const LabConfig& cfg, const CpSettings& s, int P) {
  const std::string ranks = "--ranks " + std::to_string(P);
  if (s.split == cp::CpSplit::contiguous && s.seq % P != 0)
    throw UsageError("--seq " + std::to_string(s.seq) + " is not divisible by " + ranks +
                     ": each rank holds S/P positions; give --seq a multiple of " + std::to_string(P));
  if (s.split == cp::CpSplit::zigzag && s.seq % (2 * P) != 0)
    throw UsageError("--seq " + std::to_string(s.seq) + " is not divisible by 2 × " + ranks +
                     ": --split zigzag cuts it into 2P chunks; give --seq a multiple of " + std::to_string(2 * P));
  const bool ulysses = !s.algo || *s.algo == cp::CpAlgo::ulysses;  // (none: all three)
  if (ulysses && s.heads % P != 0)
    throw UsageError(
        "--heads " + std::to_string(s.heads) + " is not divisible by " + ranks +
        ": --algo ulysses gives each rank A/P whole heads; change --heads or use --algo ring / all-gather");
  if (const std::string problem = gpt_config_problem(s.gpt(), 1, ex::TpMode::plain); !problem.empty())
    throw UsageError("the GPT (--hidden, --heads, --seq, --vocab): " + problem);
  const OptionTable<CpSettings>& t = cp_option_table();
  if (t.given(cfg.options, &CpSettings::split) && (P == 1 || s.algo == cp::CpAlgo::ulysses))
    throw UsageError(std::string("--split has no effect ") +
                     (P == 1 ? "on one rank (it holds every position)"
                             : "with --algo ulysses (each rank attends its heads over the whole sequence: balanced "
                               "whatever the split)") +
                     "; leave it out");
}

// The floating-point work of the run, near enough to refuse one that would take minutes on
// CPU cores: per step 6 FLOPs per parameter and token (the GEMMs, forward and backward) and
// attention's 4·d per causal pair, head and sequence forward, 2.5× that backward (twice for
// the dense reference, which computes the whole S × S square) — for each algorithm run and
// the one-rank reference.
double cp_run_flops(const CpSettings& s) {
  const double h = s.hidden, S = s.seq, B = s.batch, L = s.layers;
  const double gemm = 6.0 * (12 * h * h * L + double(s.vocab) * h) * S * B;
  const double attention = 3.5 * 4 * h * (S * (S + 1) / 2) * B * L;
  const double runs = double(s.algos.size()) + (s.check ? 1.0 + double(s.algos.size()) / s.steps : 0.0);
  return s.steps * runs * (gemm + 2 * attention);
}

// What the ranks of one process hold at most (thread ranks; under MPI about 1/P each): per
// rank the GPT's state (16 B/param: weights, gradients, AdamW's m and v), its activations and
// the attention's transient buffers (K/V chunks in flight; all-gather and Ulysses: the whole
// sequence's K/V or heads, twice with their gradients); with --check the dense reference
// (its B·A·S² probabilities) and the one-rank run of each algorithm.
double cp_process_bytes(const CpSettings& s, int P) {
  const double params = 16.0 * (gpt_approx_params(s.gpt()) + 13.0 * s.hidden * s.layers);
  const double whole_kv = 4.0 * s.seq * s.batch * 2 * s.hidden;
  double per_rank = 0, one_rank = 0;
  for (cp::CpAlgo a : s.algos) {
    per_rank = std::max(per_rank, cp_activation_bytes(a, s, P) + 3 * whole_kv + 4.0 * s.seq / P * s.batch * s.vocab);
    one_rank = std::max(one_rank, cp_activation_bytes(a, s, 1) + 3 * whole_kv);
  }
  const double dense = s.check ? params + gpt_activation_bytes(s.gpt(), 1, ex::TpMode::plain) + one_rank : 0;
  return P * (params + per_rank) + dense;
}

}  // namespace

CpSettings cp_settings(const LabConfig& cfg, int ranks) {
  CpSettings s = cp_option_table().parse(cfg.options);
  s.algos = s.algo ? std::vector<cp::CpAlgo>{*s.algo}
                   : std::vector<cp::CpAlgo>{cp::CpAlgo::ring, cp::CpAlgo::all_gather, cp::CpAlgo::ulysses};
  tokens_per_step(s.batch, s.seq);  // S·B counted in an int
  if (cfg.counts_steps && s.algo && *s.algo != cp::CpAlgo::ring)
    throw UsageError(
        "--step and --inject-* count the ring's transfers; all-gather CP and Ulysses move their bytes by "
        "library collectives only: add --algo ring (or all), or drop them");
  if (ranks > 100)  // the ring's tags are 3200 + step, 3300 + step, 3400 + step (MPI guarantees tags to 32767)
    throw UsageError("context parallelism over " + std::to_string(ranks) +
                     " ranks: the ring's message tags allow at "
                     "most 100; give --ranks 100 or fewer");
  require_checkpoint_options(cp_option_table(), cfg.options, s, s.algos.size() == 1, "give one --algo (not all)");
  check_shape(cfg, s, ranks);
  const char* what = "--seq, --batch, --hidden, --layers or --vocab (or --check off)";
  require_memory(cp_process_bytes(s, ranks), what);
  if (const double flops = cp_run_flops(s); flops > 1e11)  // about 15 s of this lab's CPU kernels
    throw UsageError("this run is about " + n(flops / 1e9) + " GFLOP of CPU work (the limit is 100): make " +
                     std::string(what) + " smaller, or --steps fewer");
  return s;
}

double cp_kept_floats(cp::CpAlgo algo, const CpSettings& s, int P) {
  const double S = s.seq, B = s.batch, h = s.hidden, A = s.heads, n = S / P;
  const double lse = n * B * A;
  switch (algo) {
    case cp::CpAlgo::ring: return lse;
    case cp::CpAlgo::all_gather: return lse + S * B * 2 * h;
    case cp::CpAlgo::ulysses: return lse + S * B * 4 * h / P;
  }
  return 0;
}

double cp_activation_bytes(cp::CpAlgo algo, const CpSettings& s, int P) {
  GptConfig local = s.gpt();
  local.seq = s.seq / P;  // the rank's rows: n·B
  const GptActivationBytes parts =
      gpt_activation_parts(local, 1, ex::TpMode::plain, {}, theory::Recompute::none, GptAttention::replaced);
  return parts.peak(1) + 4.0 * s.layers * cp_kept_floats(algo, s, P);
}

Report run_context_parallel_lab(Comm& comm, const LabConfig& cfg) {
  const int P = comm.size();
  const CpSettings s = cp_settings(cfg, P);
  kernels::use_one_blas_thread();  // the ranks are the parallelism
  Report rep = start_report(comm, cfg, "context_parallel");
  describe_cp_setup(rep, s, P);
  CpReference ref;
  if (s.check) ref = cp_dense_reference(comm, s);
  for (cp::CpAlgo algo : s.algos) add_cp_rows(rep, s, run_cp_algo(comm, cfg, s, algo, s.check ? &ref : nullptr), P);
  add_cp_run_rows(rep, s, s.check ? &ref : nullptr, P);
  if (s.algos.size() > 1)
    for (cp::CpAlgo algo : s.algos) rep.columns.push_back(cp::cp_algo_name(algo));
  return rep;
}

namespace ex {
std::span<const ExerciseHints> context_parallel_hints();  // exercises/context_parallel_hints.cpp
}  // namespace ex

LabInfo context_parallel_lab_info() {
  return {
      "context_parallel",
      "context parallelism on the tiny GPT: ring attention, all-gather CP and Ulysses, contiguous vs zig-zag split",
      {RunOption::faults, RunOption::step},
      cp_option_table().specs(),
      {{"online_softmax_merge", "OnlineSoftmaxMerge", 10},
       {"zigzag_partition", "ZigzagPartition", 5},
       {"ring_step", "RingStep", 10}},
      run_context_parallel_lab,
      nullptr,
      StepUnit::transfers,
      /*overlaps_compute=*/false,
      {kCpAttentionView, ViewKind::timeline, ViewKind::memory, ViewKind::report},
      // A live, stepped run: one layer of a short sequence, a handful of hops to step through.
      {{"layers", "1"}, {"seq", "16"}, {"steps", "1"}},
      cp_option_table().settings_text(),
      ex::context_parallel_hints(),
      [](const LabConfig& c) { cp_settings(c, c.ranks); },
      // small_run: the tests start from it (lab.h)
      {{"ranks", "2"}, {"layers", "1"}, {"hidden", "16"}, {"seq", "16"}, {"batch", "2"}, {"steps", "2"}},
  };
}

}  // namespace dtl
