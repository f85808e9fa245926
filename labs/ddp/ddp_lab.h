// The DDP lab (see labs/ddp/ddp_lab.cpp).
#pragma once

#include <vector>

#include "kernels/cpu/kernels.h"
#include "labs/lab.h"
#include "labs/option_table.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/mlp.h"

namespace dtl {

// --variant: how gradients are averaged, or all four one after another.
enum class DdpVariant { naive, flat, bucketed, accumulate, all };
const char* variant_name(DdpVariant v);

// What one run trains, from the lab's options: one warm-up step, then `repeat` timed runs
// of `steps` steps each (a timing is the median over the runs, with min–max).
struct DdpSettings {
  DdpVariant variant = DdpVariant::bucketed;
  MlpShape shape;
  int batch = 64, steps = 5, micro = 4, repeat = 5;
  int train_steps() const { return 1 + repeat * steps; }
  double bucket_mb = 25;
  DType precision = DType::f32;  // f32, or bf16/f16 for mixed precision
  kernels::AdamWConfig adamw{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
  int checkpoint_every = 0;  // --checkpoint-every N, --checkpoint-dir, --resume (labs/train/checkpoint_run.h)
  std::string checkpoint_dir, resume;
  bool checkpoint_async = false;
};
// The lab's options, each bound to its field of DdpSettings.
const OptionTable<DdpSettings>& ddp_option_table();

// Rank 0's reference: one process training the same model on the whole global batch.
struct OneRankReference {
  std::vector<float> weights;          // after the last step, fp32 (mixed precision: the master)
  std::vector<float> first_gradients;  // of the first step, loss scale divided out
  Repeated step_seconds;               // per step, over the timed runs (the 1-GPU baseline)
};

// One step on one rank, in seconds: what the rank computed, how long it waited after its
// backward for the gradients to be averaged, the whole step, and its collectives' time.
struct StepTiming {
  double compute = 0, wait = 0, step = 0, comm = 0;
};

// The timings of one variant, per step, combined over ranks and then over the timed runs.
struct DdpTimings {
  Repeated compute, comm, exposed, imbalance, step, efficiency;
};
// labs/ddp/ddp_timing.cpp (collective over comm): per step, the slowest rank's compute,
// step and communication; exposed communication is the smallest wait over ranks (the rank
// that finished backward last waits only for the communication) and the rest of the
// largest wait is imbalance. Then the mean of each run of `steps` steps, and the median.
DdpTimings combine_timings(Comm& comm, const std::vector<StepTiming>& timed, int steps);

// What one variant measured on this rank, combined over ranks where the report needs it.
struct DdpMeasurement {
  float first_loss = 0, last_loss = 0;
  double max_vs_single = 0, max_between_ranks = 0, first_grad_rel_diff = 0;
  DdpTimings time;
  double grad_bytes_per_step = 0;
  std::size_t params = 0, buckets = 0;
  std::size_t left_after_wait = 0;  // requests wait_for_buckets left in `pending` (most, this rank)
  int skipped_steps = 0;
  std::size_t param_peak = 0, grad_peak = 0, optimizer_peak = 0, workspace_peak = 0, activation_peak = 0,
              total_peak = 0;
  double total_estimate = 0;     // what ddp_rank_bytes predicted for this rank
  double device_vs_tracker = 0;  // the device's own count - the tracker (largest over ranks)
  CheckpointStats checkpoints;   // --resume, --checkpoint-every
};

// Bytes one rank's MemoryTracker allocates for `rows` rows per micro-batch (model, gradients,
// AdamW, activations, workspace), and everything a run on P thread ranks holds in its one
// process (every rank, rank 0's 1-rank reference, the data, the checks' host copies).
double ddp_rank_bytes(const DdpSettings& s, int rows);
double ddp_process_bytes(const DdpSettings& s, int P);

Report run_ddp_lab(Comm& comm, const LabConfig& cfg);
LabInfo ddp_lab_info();
// labs/ddp/ddp_report.cpp: the checks of one variant against one rank and between ranks,
// and its exposed communication, combined over ranks (collective over comm) ...
void measure_variant(Comm& comm, DdpMeasurement& m, const std::vector<float>& weights,
                     const std::vector<float>& first_grads, const OneRankReference& reference);
// ... and the report rows of one variant; the header's words and notes for the run.
void add_ddp_rows(Report& rep, DdpVariant v, const DdpSettings& s, const DdpMeasurement& m,
                  const OneRankReference& reference, int P);
void describe_ddp_setup(Report& rep, const DdpSettings& s, const std::vector<DdpVariant>& variants,
                        const LabConfig& cfg, std::size_t params);

}  // namespace dtl
