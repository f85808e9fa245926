// What a training lab needs to checkpoint and resume a run (labs/train/checkpoint_sharded.h
// is the format): the three options, their rules, a timed save, the report's rows, and the
// checkpoint of a model every rank holds whole (DDP) — written 1/N by each rank.
//
//   --checkpoint-every N --checkpoint-dir D   a checkpoint after every N steps, D/step-NNNNNN/
//   --checkpoint-async on                      each save's write beside the next step (a writer thread)
//   --resume PATH                              continue from PATH's (or its newest) checkpoint
//
// The MLP labs (ddp, zero) share the tensors "params" (the run's precision), "master" (mixed
// precision with an fp32 master), "adam.m", "adam.v", each the model's flat buffer, so either
// lab, on any number of ranks, resumes the other's checkpoint (and the pipeline lab's, fp32).
// The labs whose ranks hold blocks of named tensors (tensor_parallel, grid, experts,
// context_parallel, gpt) stage and read theirs through checkpoint_tensors.h, with their own
// ResumeRules; the flow (resume_run, checkpoint_if_due, finish_checkpoints) is this one. The flow
// records its spans for the timeline (core/trace/vocab.h's checkpoint run parts): each save where
// training stopped for it, each rank's file's write, and a resumed run's read of its checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "labs/option_table.h"
#include "labs/report.h"
#include "labs/shared_options.h"
#include "labs/train/checkpoint_sharded.h"
#include "labs/train/optimizer.h"
#include "labs/train/param_layout.h"

namespace dtl {

// The teacher data's seed in the MLP labs (make_teacher_data): the data order a checkpoint records.
inline constexpr std::uint64_t kMlpDataSeed = 7;

// What a lab's settings ask of its saves.
struct CheckpointPlan {
  int every = 0;  // 0: never
  std::string dir;
  bool async = false;
};
template <typename S>
CheckpointPlan checkpoint_plan(const S& s) {
  return {s.checkpoint_every, s.checkpoint_dir, s.checkpoint_async};
}

// What a lab hands to a save: its pieces and the host copies they point into (the staging
// copy an asynchronous save writes from while training changes the device's buffers).
struct StagedPieces {
  std::vector<PieceView> pieces;
  std::shared_ptr<const void> holder;
  double bytes = 0;  // the staging copy's size on this rank
};

struct CheckpointStats {
  int resumed_from = -1;         // the step resumed from; -1: started from scratch
  double resume_bytes_read = 0;  // by the busiest rank
  bool async = false;
  // Per save, slowest rank: the time training stopped for it (synchronous: the whole save;
  // asynchronous: the staging copy and the folder, then finish() after the next step), and
  // the time the writer thread spent on the rank's file (asynchronous: beside training).
  std::vector<double> blocked_seconds, write_seconds;
  double save_bytes = 0;                 // one checkpoint's files (rank 0 counts them)
  double staging_bytes = 0;              // the largest staging copy of a rank
  std::shared_ptr<ShardedSave> pending;  // an asynchronous save still writing
  double pending_blocked = 0;            // what its start blocked
  std::vector<std::string> failures;     // saves that could not be written, in words (the report's failures)
};

// Rows of the options table, bound to the settings' fields of the same names.
template <typename S>
void add_checkpoint_rows(OptionTable<S>& t) {
  t.integer("checkpoint-every", &S::checkpoint_every, 0, 0, 1 << 30,
            "save a sharded checkpoint after every N steps (with --checkpoint-dir; 0: never)")
      .path("checkpoint-dir", &S::checkpoint_dir,
            "folder of the sharded checkpoints (step-NNNNNN/: one file per rank and a manifest)", true)
      .path("resume", &S::resume,
            "continue from a checkpoint folder, or the newest complete one under a --checkpoint-dir, on any ranks")
      .choice("checkpoint-async", &S::checkpoint_async, false, kOnOffNames,
              "write each checkpoint on a thread while the next step trains (a host staging copy first)");
}

// The rules: --checkpoint-every and --checkpoint-dir together; `one_case` (the lab runs one
// variant or stage, not all of them) whenever either saves or resumes; fp16's dynamic loss
// scale is not saved. UsageError naming what to change; `cases` says how to choose one case.
template <typename S>
void require_checkpoint_options(const OptionTable<S>& t, const LabOptions& o, const S& s, bool one_case,
                                const std::string& cases) {
  const bool every = t.given(o, &S::checkpoint_every), dir = t.given(o, &S::checkpoint_dir);
  if (t.given(o, &S::checkpoint_async) && !every)
    throw UsageError(
        "--checkpoint-async chooses how --checkpoint-every N saves: give --checkpoint-every and --checkpoint-dir");
  if (every != dir)
    throw UsageError(every ? "--checkpoint-every N saves into --checkpoint-dir D: give both"
                           : "--checkpoint-dir D is where --checkpoint-every N saves: give both");
  if (!every && s.resume.empty()) return;
  if (every && s.checkpoint_every < 1) throw UsageError("--checkpoint-every must be at least 1");
  if (!one_case) throw UsageError("checkpoints save and resume one training run: " + cases);
  if constexpr (requires { s.precision; })  // (a lab in fp32 only has no --precision)
    if (s.precision == DType::f16)
      throw UsageError("checkpoints do not keep fp16's dynamic loss scale yet: use --precision bf16 or fp32");
}

// The data a run trains on, for --resume's checks: `samples_per_step` rows for each step, in the
// order of the seed `data_seed`; `batch` names the options that set them ("--batch 24").
struct DataOrder {
  std::uint64_t samples_per_step = 0, data_seed = 0;
  std::string batch;
};
// After step `done` of `lab`: the position a checkpoint records.
TrainPosition train_position(const std::string& lab, int done, const DataOrder& data);
// What --resume accepts: a checkpoint saved by one of `labs` (labs of the same model and tensor
// names), on this run's data, before its last step (of `train_steps`).
struct ResumeRules {
  std::vector<std::string> labs;
  DataOrder data;
  int train_steps = 0;
  std::string steps = "--steps";  // the options that set train_steps
};
// The MLP labs' (ddp, zero, pipeline): the teacher data, `batch` rows a step.
ResumeRules mlp_resume_rules(int batch, int train_steps);

// The manifest of --resume's checkpoint, checked against `rules`. UsageError otherwise.
Manifest resume_manifest(const std::string& resume, const ResumeRules& rules);
// The step to start from: 0 without --resume; else resume_manifest's checkpoint, verified on
// every rank, loaded by `load` (this rank's pieces; it returns the bytes it read), the busiest
// rank's bytes and the step into `stats`. Collective.
int resume_run(Comm& comm, const std::string& resume, const ResumeRules& rules, CheckpointStats& stats,
               const std::function<std::size_t(const Manifest&)>& load);
// After step pos.step: finishes the asynchronous save still writing (it overlapped this step),
// then, when pos.step is a multiple of plan.every, stages this rank's pieces (`stage`) and saves
// them, synchronously or on a writer thread; timed into `stats`. A save that cannot be written
// (CheckpointNotSaved: a full disk) goes into stats.failures and the run trains on. Collective.
void checkpoint_if_due(Comm& comm, const CheckpointPlan& plan, const TrainPosition& pos, CheckpointStats& stats,
                       const std::function<StagedPieces()>& stage);
// After the last step: the asynchronous save still writing, finished. Collective.
void finish_checkpoints(Comm& comm, CheckpointStats& stats);
// The saves' rows; each failed save a failure of the report (exit 1, after the report prints).
void add_checkpoint_report(Report& rep, const std::string& id, const CheckpointStats& stats);

// Elements `range` of the model's flat buffer that a rank saves: the parameters there (on the
// model's device) and the optimizer that updates them, from its element `opt_offset`.
struct OwnedRange {
  Range range;
  const void* params = nullptr;
  const Optimizer* opt = nullptr;
  std::size_t opt_offset = 0;
};
// This rank's ranges of "params", "master" (when the optimizer keeps one), "adam.m" and "adam.v",
// each tensor of n elements, copied to the host. DDP passes its 1/N of the whole (shard_of); a
// pipeline stage its layers.
StagedPieces stage_mlp_pieces(const std::vector<OwnedRange>& owned, DType precision, std::size_t n);
// Elements `range` of the checkpoint into `params` (on the model's device) and into `opt`, which
// updates exactly that range. Returns the bytes read.
std::size_t load_mlp_range(const Manifest& m, Range range, void* params, DType precision, Optimizer& opt,
                           bool has_master);
// Its two halves: the parameters of `range`, and the optimizer's state (its steps, m, v, master).
std::size_t load_params_range(const Manifest& m, Range range, void* params, DType precision);
std::size_t load_optimizer_range(const Manifest& m, Range range, Optimizer& opt, bool has_master);
// The run's tensors in the checkpoint, with its dtype and Ψ; "master" exactly when the run keeps one.
void require_mlp_tensors(const Manifest& m, DType precision, std::size_t n, bool has_master);

}  // namespace dtl
