// The grid lab (see grid_lab.cpp): data, tensor and pipeline parallelism on one dp × tp × pp
// grid of ranks (Topology), ZeRO-1 optionally on the data axis — the curriculum's "3D
// parallelism" (seeds 001, 002, 004) run for real, every byte counted per axis.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/comm/topology.h"
#include "core/theory/schedule.h"
#include "kernels/cpu/kernels.h"
#include "labs/lab.h"
#include "labs/option_table.h"
#include "labs/tensor_parallel/tp_mlp.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/gpt_activation_report.h"

namespace dtl {

// --model and --zero.
enum class GridModelKind { mlp, gpt };
enum class GridZero { none, optimizer_states };

// The lab's options, typed (grid_option_table() binds each flag to its field), and what
// the run derives from them.
struct GridSettings {
  GridModelKind model = GridModelKind::mlp;
  // --mlp-form: the MLP's blocks (tp_mlp.h); stack: the ddp, zero and pipeline labs' layers, on
  // their teacher data with their AdamW, so the grid continues their checkpoints.
  TpMlpForm mlp_form = TpMlpForm::residual_blocks;
  GridShape grid;
  GridZero zero = GridZero::none;
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::one_f_one_b;
  int layers = 4, hidden = 64, seq = 16, batch = 8, micro_batches = 4, steps = 3;
  int heads = 4, vocab = 64;                              // the GPT's
  theory::Recompute recompute = theory::Recompute::none;  // the GPT's --recompute (labs/train/gpt.h)
  bool check = true;
  double compute_us = 0;  // > 0: every F lasts this long, every B twice (labs/pipeline's --compute-us)
  kernels::AdamWConfig adamw{1e-3f, 0.9f, 0.999f, 1e-5f, 0.0f};
  // Sharded checkpoints (labs/train/checkpoint_run.h): the MLP's.
  int checkpoint_every = 0;
  std::string checkpoint_dir, resume;
  bool checkpoint_async = false;
  TpMlpShape mlp_shape(int rows) const { return {hidden, layers, rows, mlp_form}; }
  int global_rows() const { return batch * seq; }                               // G: tokens per step
  int micro_rows() const { return global_rows() / (grid.dp * micro_batches); }  // R: per micro-batch on a rank
  int micro_sequences() const { return batch / (grid.dp * micro_batches); }     // the GPT's: whole sequences
};
const OptionTable<GridSettings>& grid_option_table();

// Blocks [first, last] of pipeline stage `stage` of P: L/P each, the first L mod P one more.
struct StageBlocks {
  int first = 0, last = 0;
  int count() const { return last - first + 1; }
};
StageBlocks stage_blocks(int layers, int stages, int stage);

// Bytes this rank sent per step by axis, from its events: the ring bytes of its dp and tp
// collectives (2(N−1)/N of an all-reduce's buffer, (N−1)/N of an all-gather's or a
// reduce-scatter's whole vector) and the pp point-to-point sends; apart, the GPT's tied
// embedding's all-reduce between the first and the last stage (a pp-axis collective).
struct AxisBytes {
  double dp = 0, tp = 0, pp = 0, embedding = 0;
};

// What one rank measured and what the formulas say for it.
struct GridRankFigures {
  AxisBytes bytes, predicted;                                                        // per step
  double param_bytes = 0, grad_bytes = 0, optimizer_bytes = 0, activation_peak = 0;  // peaks, by tag
  double predicted_optimizer = 0, predicted_activation = 0;
};

struct GridMeasurement {
  float first_loss = 0, last_loss = 0;
  double max_weight_diff = -1;   // against one rank, max over ranks (-1: not checked)
  double max_loss_diff = -1;     // against one rank, the largest over the steps (-1: not checked)
  double bubble = 0;             // idle share of the step, 1 − Σ busy / (P·step), rank 0's pipeline
  double device_vs_tracker = 0;  // the device's own count - the tracker (largest over ranks)
  Repeated step;
  GridRankFigures mine;
  std::optional<GptActivationFigures> activation;  // the GPT's per layer and recomputed set (max over ranks)
  std::vector<GridRankFigures> ranks;              // every rank's, in world order (run_grid_lab gathers them)
  CheckpointStats checkpoints;
};

GridMeasurement run_grid(Comm& world, const LabConfig& cfg, const GridSettings& s);
GridSettings grid_settings(const LabConfig& cfg, int ranks);
Report run_grid_lab(Comm& comm, const LabConfig& cfg);
// The lab's own view in dtlab-viz: the dp × tp × pp grid of ranks and the groups each belongs to
// (viz/views/grid/topology_view.cpp).
inline constexpr ViewKind kTopologyView{"topology"};
LabInfo grid_lab_info();
void add_grid_rows(Report& rep, const GridSettings& s, const GridMeasurement& m);

}  // namespace dtl
