// The ZeRO lab (see labs/zero/zero_lab.cpp): stages 0 (plain DDP) to 3 (FSDP) on the same
// model and data, every byte of memory and communication beside the curriculum's formulas.
#pragma once

#include <string>
#include <vector>

#include "core/theory/zero.h"
#include "kernels/cpu/kernels.h"
#include "labs/lab.h"
#include "labs/option_table.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/mlp.h"
#include "labs/train/optimizer.h"

namespace dtl {

// One of ZeRO's stages (core/theory/zero.h): what each rank keeps only its 1/N shard of.
// The code asks what a stage does (shards_params), never which number it is.
enum class ZeroStage : std::uint8_t { ddp = 0, optimizer_states = 1, gradients = 2, parameters = 3 };
inline int stage_number(ZeroStage s) { return int(s); }                    // the curriculum's 0..3
inline bool shards_optimizer(ZeroStage s) { return s != ZeroStage::ddp; }  // 1-3: master, m, v
inline bool shards_gradients(ZeroStage s) {
  return s >= ZeroStage::gradients;
}  // 2, 3: a bucket per unit, freed once reduced
inline bool shards_params(ZeroStage s) { return s == ZeroStage::parameters; }  // 3 (FSDP): gathered before each use
// 1, 2: every rank holds every parameter, so the updated shards are all-gathered after the step.
inline bool gathers_after_step(ZeroStage s) { return shards_optimizer(s) && !shards_params(s); }

// --stage: one of ZeRO's stages, or all four.
enum class ZeroStageChoice { ddp, optimizer_states, gradients, parameters, all };
enum class ZeroSweep { none, prefetch };

// The lab's options, typed (zero_option_table() binds each flag to its field), and what
// the run derives from them.
struct ZeroSettings {
  ZeroStageChoice stage = ZeroStageChoice::all;
  MlpShape shape;
  int batch = 32, steps = 3, repeat = 3;
  int train_steps() const { return 1 + repeat * steps; }  // one warm-up step, then the timed runs
  int layers_per_unit = 1;                                // --unit: layers per sharding unit
  bool prefetch = true;                                   // --prefetch: stage 3 gathers ahead
  int prefetch_depth = 1;  // stage 3: units gathered ahead (0 after parsing when --prefetch off)
  double bucket_mb = 25;   // stage 0: DDP's all-reduce buckets
  DType precision = DType::bf16;
  MasterWeights master = MasterWeights::keep;
  ZeroSweep sweep = ZeroSweep::none;
  kernels::AdamWConfig adamw{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
  int checkpoint_every = 0;  // --checkpoint-every N: save after every N steps (0: never)
  std::string checkpoint_dir, resume;
  bool checkpoint_async = false;
  // What one parameter costs in this run before sharding: {2, 2, 12} mixed with a master,
  // {2, 2, 8} without, {4, 4, 8} in fp32 (core/theory/zero.h).
  theory::ZeroPrecision bytes_per_param() const;
};
const OptionTable<ZeroSettings>& zero_option_table();

// One step on one rank, in seconds: the whole step, the time it waited for communication
// (all of it: exposed), and of that the wait for stage 3's parameter all-gathers.
struct ZeroStepTiming {
  double step = 0, exposed = 0, exposed_gather = 0, optimizer = 0;
};

// A rank's memory over one stage, replayed from its alloc/free events (MemoryByTag, the
// same replay as the viewer's): each tag's peak, the total's, and each tag at that moment.
struct ZeroMemory : MemoryByTag {
  std::size_t model_state() const;  // params + grads + master + optimizer (m, v), at their peaks
};

// What one stage measured, combined over ranks where the report needs it.
struct ZeroMeasurement {
  ZeroStage stage = ZeroStage::ddp;
  int prefetch_depth = 0;
  float first_loss = 0, last_loss = 0;
  double max_vs_reference = 0, max_vs_fp32 = 0, first_grad_rel_diff = 0;
  double max_vs_stage0 = -1;  // rank 0: against stage 0's weights in this run (-1: not run)
  Repeated step, exposed, exposed_gather, optimizer;
  double bus_bytes_per_step = 0;           // rank 0's collectives, ring bytes sent (see zero_report.cpp)
  std::vector<ZeroMemory> memory;          // per rank (rank 0 holds all)
  std::vector<double> exact_model_state;   // per rank: what its buffers' sizes add up to
  std::vector<std::size_t> pool_reserved;  // per rank: bytes its buffer pool keeps
  std::size_t padding = 0;                 // elements over all ranks
  double device_vs_tracker = 0;            // the device's own count - tracker - pool (largest over ranks)
  int units = 0, skipped_steps = 0;
  std::size_t buckets = 0;      // stage 0: DDP's all-reduce buckets (--bucket-mb)
  CheckpointStats checkpoints;  // --resume, --checkpoint-every (labs/train/checkpoint_run.h)
};

// Rank 0's references: one process training the same model on the whole global batch, in
// the run's precision and (mixed precision) in fp32.
struct ZeroReference {
  std::vector<float> weights, fp32_weights, first_gradients;
  Repeated step_seconds;
};

// Bytes the run's process needs (thread ranks share it), for the check before anything
// is allocated.
double zero_process_bytes(const ZeroSettings& s, int P, int stages);

Report run_zero_lab(Comm& comm, const LabConfig& cfg);
LabInfo zero_lab_info();

class ZeroRank;
// The step a run starts from: 0, or --resume's checkpoint step with its state loaded into `rank`
// (read_manifest, every checksum verified over the ranks, then each rank's byte ranges).
int zero_resume(Comm& comm, const ZeroSettings& s, ZeroRank& rank, ZeroMeasurement& m);
// After `done` steps: a checkpoint when --checkpoint-every divides it, timed into m.
void zero_checkpoint_after(Comm& comm, const LabConfig& cfg, const ZeroSettings& s, ZeroRank& rank, int done,
                           ZeroMeasurement& m);
// labs/zero/zero_report.cpp
void add_zero_rows(Report& rep, const ZeroSettings& s, const ZeroMeasurement& m, std::size_t psi, int P);
// The sweep's rows and plot; with stage 0's step time row, each depth's ratio to it.
void add_prefetch_sweep(Report& rep, const std::vector<ZeroMeasurement>& sweep, double stage0_step);
void describe_zero_setup(Report& rep, const ZeroSettings& s, const std::vector<ZeroStage>& stages, std::size_t psi,
                         int units);
std::string stage_case(ZeroStage stage);   // "zero0" .. "zero3": the report's case ids
std::string stage_phase(ZeroStage stage);  // "ZeRO-0" .. "ZeRO-3": the trace's phase labels

}  // namespace dtl
