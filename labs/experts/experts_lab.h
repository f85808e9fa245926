// The experts lab (experts_lab.cpp): a mixture-of-experts model trained with expert
// parallelism over the run's ranks, every routed row counted, beside one rank.
#pragma once

#include <string>
#include <vector>

#include "labs/experts/moe_model.h"
#include "labs/lab.h"
#include "labs/option_table.h"
#include "labs/train/checkpoint_run.h"

namespace dtl {

// --overflow: tokens over an expert's capacity are dropped (they pass by the residual
// only), or none is (`pad`: no capacity, each expert's batch is its whole load — what a
// fixed-size implementation pads every expert's buffer to the largest load for).
enum class ExpertOverflow { drop, pad };
// --model: the MoE blocks on a regression target, or the tiny GPT with MoE MLPs.
enum class ExpertsModelKind { mlp, gpt };

// The tiny GPT's own shape (--model gpt; labs/train/gpt.h): B sequences of S tokens.
struct ExpertsGptShape {
  int seq = 16, batch = 8, vocab = 64, heads = 4;
};

struct ExpertsSettings {
  ExpertsModelKind model = ExpertsModelKind::mlp;
  moe::MoeShape shape;
  ExpertsGptShape gpt;
  ExpertOverflow overflow = ExpertOverflow::drop;
  int steps = 3;
  bool check = true;  // train one rank too and compare the loss, every gradient and weight
  kernels::AdamWConfig adamw{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
  // Sharded checkpoints (labs/train/checkpoint_run.h): the MoE blocks'.
  int checkpoint_every = 0;
  std::string checkpoint_dir, resume;
  bool checkpoint_async = false;
};
const OptionTable<ExpertsSettings>& experts_option_table();
// The options as settings for EP ranks; UsageError naming what a shape breaks.
ExpertsSettings experts_settings(const LabConfig& cfg, int ep);
double experts_process_bytes(const ExpertsSettings& s, int ep);  // the memory require_memory checks

// What the run measured on this rank, with the totals over ranks where a row needs them.
struct ExpertsMeasurement {
  float first_loss = 0, last_loss = 0, aux_loss = 0;
  double loss_diff = -1, max_grad_rel_diff = -1, max_weight_diff = -1;  // vs 1 rank (-1: not checked)
  // AdamW's first update against one rank's, in units of lr (adam_first_update_difference,
  // labs/measure.h): sets the weights' tolerance.
  double first_update_diff = 0;
  double routing_differences = -1;                        // slots routed or dropped differently from one rank
  double dropped = 0, reference_dropped = -1, slots = 0;  // first step, every block, all ranks
  int capacity = 0;
  double max_per_expert = 0, mean_per_expert = 0;  // routed choices, first step, busiest block
  double a2a_bytes_diff = 0;                       // |trace − routed rows × h × 4|, largest over ranks
  double dispatch_bytes = 0;                       // the forward dispatch's bytes per rank per block (mean), trace
  double to_others_bytes = 0;                      // of which to other ranks (mean over ranks and blocks)
  double a2a_calls = 0, a2a_calls_expected = 0;
  Repeated step;                                           // a training step (slowest rank)
  double a2a_seconds = 0, expert_wall_seconds = 0;         // per step, medians (rank mean)
  double expert_seconds_max = 0, expert_seconds_mean = 0;  // the experts' CPU time, busiest rank and mean
  double a2a_seconds_min = 0;                              // the rank that waited least (its experts had the most rows)
  double rows_max = 0, rows_mean = 0;  // rows the experts of a rank computed, max and mean over ranks
  double predicted_a2a_seconds = 0;    // on the emulated link (0 without one)
  CheckpointStats checkpoints;
};

ExpertsMeasurement run_experts(Comm& comm, const LabConfig& cfg, const ExpertsSettings& s);
Report run_experts_lab(Comm& comm, const LabConfig& cfg);
void add_experts_rows(Report& rep, const ExpertsSettings& s, const ExpertsMeasurement& m,
                      int ep);  // experts_report.cpp
void describe_experts_setup(Report& rep, const ExpertsSettings& s);
// The lab's own view in dtlab-viz: the tokens × experts routing of a step, the all-to-all
// as a rank × rank matrix of rows, expert loads beside the capacity (viz/views/experts/).
inline constexpr ViewKind kRoutingView{"routing"};
LabInfo experts_lab_info();

}  // namespace dtl
