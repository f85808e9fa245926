// The pipeline lab (see labs/pipeline/pipeline_lab.cpp): the MLP's layers split over P
// stages (ranks), micro-batches flowing through them under a schedule (schedule.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/theory/schedule.h"
#include "core/theory/schedule_csv.h"
#include "kernels/cpu/kernels.h"
#include "labs/lab.h"
#include "labs/option_table.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/mlp.h"

namespace dtl {

// --schedule: one schedule, or all eight built-in ones.
enum class ScheduleChoice { gpipe, one_f_one_b, interleaved, zb_h1, zb_h2, zb_v, interleaved_zb, dualpipe_v, all };

// The lab's options, typed (pipeline_option_table() binds each flag to its field), and
// what the run derives from them.
struct PipelineSettings {
  ScheduleChoice schedule = ScheduleChoice::one_f_one_b;
  std::string schedule_csv, export_csv;              // --schedule-csv (read, checked, run), --export-csv (written)
  std::shared_ptr<const pipeline::CsvSchedule> csv;  // the file's schedule, read by the settings
  int stages = 0;                                    // --stages: 0, or --ranks again (every rank is one stage)
  MlpShape shape;
  int batch = 64, micro_batches = 8, chunks = 2, steps = 2, repeat = 3;
  int train_steps() const { return 1 + repeat * steps; }  // one warm-up step, then the timed runs
  // --compute-us: emulated action times in µs (0: the real compute runs).
  double forward_us = 0, backward_us = 0, weight_us = 0;
  bool emulated() const { return forward_us > 0; }
  kernels::AdamWConfig adamw{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
  int rows() const { return batch / micro_batches; }  // per micro-batch
  int checkpoint_every = 0;  // --checkpoint-every N, --checkpoint-dir, --resume (labs/train/checkpoint_run.h)
  std::string checkpoint_dir, resume;
  bool checkpoint_async = false;
};
const OptionTable<PipelineSettings>& pipeline_option_table();

// Layers [first, last] of virtual stage vs of P·v: L layers split as evenly as they go,
// the first L mod (P·v) virtual stages one layer more.
LayerSpan virtual_stage_layers(int layers, int virtual_stages, int vs);

// Activation bytes (tag activation) stage `stage` holds at most under `sched`: the
// micro-batches in flight on it, each its chunk's z and GELU(z) per layer (zb: + dL/dz, kept
// from B to W), walked through the schedule, plus each chunk model's backward workspace.
double predicted_activation_peak(const PipelineSettings& s, const pipeline::Schedule& sched, int stage);

// What one schedule measured, combined over stages on rank 0.
struct PipelineMeasurement {
  pipeline::ScheduleKind kind = pipeline::ScheduleKind::one_f_one_b;
  int chunks = 1;
  float first_loss = 0, last_loss = 0;
  double max_vs_reference = -1;      // -1: emulated compute, nothing to compare
  Repeated step, bubble;             // the step (slowest stage) and the idle share of it
  Repeated bubble_tiled;             // 1 − Σ busy / (P · the longest stage's own span): Simulation::bubble_tiled
  std::vector<double> stage_bubble;  // per stage: 1 − busy / step (median run)
  std::vector<double> stage_activation_peak, stage_in_flight_peak;  // per stage
  std::vector<int> forwards_before_backward;                        // per stage, from the schedule
  double p2p_bytes_per_step = 0;                                    // sent by all stages, from events
  double simulated_bubble = 0, simulated_tiled = 0;                 // the simulator, with the run's action times
  pipeline::PublishedBubble published;                              // the source's formula with the run's times
  std::vector<int> predicted_in_flight;                             // per stage, from the schedule
  std::vector<int> published_in_flight;                             // per stage, the source's bound (-1: none)
  std::vector<double> predicted_activation;                         // per stage
  int loss_stage = -1, predicted_loss_stage = -1;                   // the stage computing the loss: the run's, theory's
  std::vector<int> stage_pairs, predicted_pairs;                    // per stage: overlapped F&B pairs run, theory's
  double device_vs_tracker = 0;  // the device's own count - the tracker (largest over stages)
  CheckpointStats checkpoints;   // --resume, --checkpoint-every
};

Report run_pipeline_lab(Comm& comm, const LabConfig& cfg);
// The lab's own view in dtlab-viz: a row per stage of F/B/W blocks and the bubble between them
// (viz/views/pipeline/pipeline_view.cpp).
inline constexpr ViewKind kPipelineView{"pipeline"};
LabInfo pipeline_lab_info();

// The schedule kinds --schedule names (all of them for `all`), and one kind's lists for P stages
// (pipeline_schedules.cpp): 1F1B from the learner's one_f_one_b, ZB-H1 and interleaved-zb split by
// the learner's split_backward, the others core/theory's; each checked before it runs.
std::vector<pipeline::ScheduleKind> kinds_of(const PipelineSettings& s);
pipeline::Schedule schedule_of(pipeline::ScheduleKind k, const PipelineSettings& s, int P);

// labs/pipeline/pipeline_csv.cpp: --schedule-csv read and checked into s.csv (UsageError naming
// the row, the cell and the rule; P and M from the file), and --export-csv written.
void read_schedule_csv(const LabConfig& cfg, PipelineSettings& s, int P);
void export_schedule_csv(const PipelineSettings& s, const pipeline::Schedule& sched);

// labs/pipeline/pipeline_report.cpp
void add_pipeline_rows(Report& rep, const PipelineSettings& s, const PipelineMeasurement& m, int P);
void describe_pipeline_setup(Report& rep, const PipelineSettings& s, const std::vector<pipeline::ScheduleKind>& kinds);

}  // namespace dtl
