// The context-parallel lab (cp_lab.cpp): the tiny GPT of labs/train/gpt.h with each
// sequence cut over the run's P ranks (cp_partition.h), every block's attention computed
// across them by ring attention, all-gather CP or Ulysses (cp_exchange.h), beside one rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "labs/context_parallel/cp_exchange.h"
#include "labs/lab.h"
#include "labs/option_table.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/gpt.h"

namespace dtl {

struct CpSettings {
  std::optional<cp::CpAlgo> algo = cp::CpAlgo::ring;  // --algo: one, or none for all three (a report column each)
  cp::CpSplit split = cp::CpSplit::contiguous;
  int layers = 2, hidden = 32, heads = 4, seq = 64, batch = 2, vocab = 64, steps = 3;
  bool check = true;  // train one rank too and compare the loss, every gradient and weight, its memory
  kernels::AdamWConfig adamw{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
  // Sharded checkpoints (labs/train/gpt_sharded.h): one --algo; rank 0 saves (every rank holds the model).
  int checkpoint_every = 0;
  std::string checkpoint_dir, resume;
  bool checkpoint_async = false;
  std::vector<cp::CpAlgo> algos;  // what --algo runs, in order
  GptConfig gpt() const { return {vocab, seq, hidden, heads, layers, batch}; }
  cp::CpLayer layer() const { return {{seq, batch, heads, hidden / heads}, split}; }
};
const OptionTable<CpSettings>& cp_option_table();
// The options as settings for P ranks; UsageError naming the option a shape breaks.
CpSettings cp_settings(const LabConfig& cfg, int ranks);

// What each rank's attention override keeps per block (floats) for its backward, besides the
// block's own qkv and output: the log-sum-exp per row and head (n·B·A), and
//   all-gather  every rank's K/V, gathered (S·B·2h)        Ulysses  its heads' qkv and output
//                                                                   over the whole sequence (S·B·4h/P)
double cp_kept_floats(cp::CpAlgo algo, const CpSettings& s, int ranks);
// Activation bytes per rank (MemTag::activation, its peak): the GPT's blocks and end on the
// rank's n·B rows without probabilities (gpt_activation_parts, GptAttention::replaced) plus
// L·4·cp_kept_floats.
double cp_activation_bytes(cp::CpAlgo algo, const CpSettings& s, int ranks);

// One algorithm's run, measured on every rank and combined.
struct CpMeasurement {
  cp::CpAlgo algo = cp::CpAlgo::ring;
  float first_loss = 0, last_loss = 0;
  double loss_diff = -1, max_grad_rel_diff = -1, max_weight_diff = -1;  // vs 1 rank (-1: not checked)
  // Bytes one rank sent for one layer, from its trace, the call farthest from the formula
  // (every call of every rank); and how many calls there were per rank.
  double fwd_bytes = 0, bwd_bytes = 0, calls = 0;
  double attn_seconds_max = 0, attn_seconds_mean = 0;  // attention compute per step, busiest rank and mean
  // The ring's K/V hops per step (rank mean): their transfer time, the part the block did
  // not hide (the wait after it), and backward's dK/dV hops (each waits for its block).
  double hop_seconds = 0, exposed_seconds = 0, dkv_seconds = 0;
  double activation_peak = 0;            // bytes, the largest over ranks
  double one_rank_activation_peak = -1;  // the same algorithm on one rank (-1: not run)
  Repeated step;
  CheckpointStats checkpoints;
  int steps_run = 0;  // fewer than --steps when resumed
};

// The dense one-rank reference (the plain GPT, the whole batch): what every algorithm equals.
struct CpReference {
  float first_loss = 0;
  std::vector<std::vector<float>> first_grads, final_params;  // the GPT's table order
  double activation_peak = 0;  // its MemTag::activation peak (it keeps the probabilities)
};
CpReference cp_dense_reference(Comm& comm, const CpSettings& s);
CpMeasurement run_cp_algo(Comm& comm, const LabConfig& cfg, const CpSettings& s, cp::CpAlgo algo,
                          const CpReference* ref);

Report run_context_parallel_lab(Comm& comm, const LabConfig& cfg);
void describe_cp_setup(Report& rep, const CpSettings& s, int ranks);                        // cp_report.cpp
void add_cp_rows(Report& rep, const CpSettings& s, const CpMeasurement& m, int ranks);      // cp_report.cpp
void add_cp_run_rows(Report& rep, const CpSettings& s, const CpReference* ref, int ranks);  // cp_report.cpp
LabInfo context_parallel_lab_info();
// The lab's own view in dtlab-viz: the S × S attention blocks by the rank computing them, K/V
// around the ring, Ulysses' all-to-all (viz/views/context_parallel/attention_view.cpp).
inline constexpr ViewKind kCpAttentionView{"cp_attention"};

}  // namespace dtl
