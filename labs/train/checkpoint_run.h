// What a training lab needs to checkpoint and resume a run (labs/train/checkpoint_sharded.h
// is the format): the three options, their rules, a timed save, the report's rows, and the
// checkpoint of a model every rank holds whole (DDP) — written 1/N by each rank.
//
//   --checkpoint-every N --checkpoint-dir D   a checkpoint after every N steps, D/step-NNNNNN/
//   --resume PATH                              continue from PATH's (or its newest) checkpoint
//
// The MLP labs (ddp, zero) share the tensors "params" (the run's precision), "master" (mixed
// precision with an fp32 master), "adam.m", "adam.v", each the model's flat buffer, so either
// lab, on any number of ranks, resumes the other's checkpoint (and the pipeline lab's, fp32).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "labs/option_table.h"
#include "labs/report.h"
#include "labs/train/checkpoint_sharded.h"
#include "labs/train/optimizer.h"
#include "labs/train/param_layout.h"

namespace dtl {

// The teacher data's seed in the MLP labs (make_teacher_data): the data order a checkpoint records.
inline constexpr std::uint64_t kMlpDataSeed = 7;

struct CheckpointStats {
  int resumed_from = -1;             // the step resumed from; -1: started from scratch
  double resume_bytes_read = 0;      // by the busiest rank
  std::vector<double> save_seconds;  // each save's wall time, slowest rank
  double save_bytes = 0;             // one checkpoint's files (rank 0 counts them)
};

// Rows of the options table, bound to the settings' fields of the same names.
template <typename S>
void add_checkpoint_rows(OptionTable<S>& t) {
  t.integer("checkpoint-every", &S::checkpoint_every, 0, 0, 1 << 30,
            "save a sharded checkpoint after every N steps (with --checkpoint-dir; 0: never)")
      .path("checkpoint-dir", &S::checkpoint_dir,
            "folder of the sharded checkpoints (step-NNNNNN/: one file per rank and a manifest)", true)
      .path("resume", &S::resume,
            "continue from a checkpoint folder, or the newest complete one under a --checkpoint-dir, on any ranks");
}

// The rules: --checkpoint-every and --checkpoint-dir together; `one_case` (the lab runs one
// variant or stage, not all of them) whenever either saves or resumes; fp16's dynamic loss
// scale is not saved. UsageError naming what to change; `cases` says how to choose one case.
template <typename S>
void require_checkpoint_options(const OptionTable<S>& t, const LabOptions& o, const S& s, bool one_case,
                                const std::string& cases) {
  const bool every = t.given(o, &S::checkpoint_every), dir = t.given(o, &S::checkpoint_dir);
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

// The manifest of --resume's checkpoint, checked against this run: saved by an MLP lab, with
// this run's batch and data, before its last step. UsageError otherwise.
Manifest resume_manifest(const std::string& resume, int batch, int train_steps);
// Saves when `done` is a multiple of `every` (> 0), timing `save` (a collective) into `stats`.
void checkpoint_if_due(Comm& comm, int every, int done, CheckpointStats& stats,
                       const std::function<std::string()>& save);
void add_checkpoint_report(Report& rep, const std::string& id, const CheckpointStats& stats);

// Elements `range` of the model's flat buffer that a rank saves: the parameters there (on the
// model's device) and the optimizer that updates them, from its element `opt_offset`.
struct OwnedRange {
  Range range;
  const void* params = nullptr;
  const Optimizer* opt = nullptr;
  std::size_t opt_offset = 0;
};
// Collective: every rank's ranges of "params", "master" (when the optimizer keeps one), "adam.m"
// and "adam.v", each tensor of n elements. DDP passes its 1/N of the whole (shard_of); a pipeline
// stage its layers.
std::string save_mlp_checkpoint(Comm& comm, const std::string& root, const std::vector<OwnedRange>& owned,
                                DType precision, std::size_t n, const TrainPosition& pos);
// Elements `range` of the checkpoint into `params` (on the model's device) and into `opt`, which
// updates exactly that range. Returns the bytes read.
std::size_t load_mlp_range(const Manifest& m, Range range, void* params, DType precision, Optimizer& opt,
                           bool has_master);
// The run's tensors in the checkpoint, with its dtype and Ψ; "master" exactly when the run keeps one.
void require_mlp_tensors(const Manifest& m, DType precision, std::size_t n, bool has_master);

}  // namespace dtl
