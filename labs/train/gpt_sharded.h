// The tiny GPT's part of a sharded checkpoint (labs/train/checkpoint_tensors.h): each tensor under
// GPT-2's name (docs/checkpoints.md's table), whole in the checkpoint, and the rows or columns
// this rank's tensor-parallel slice holds as runs of it; AdamW's m and v beside each. So a
// checkpoint of the GPT trained on T ranks resumes on any T' (each rank reads its slice).
#pragma once

#include <vector>

#include "labs/train/checkpoint_tensors.h"
#include "labs/train/gpt.h"
#include "labs/train/optimizer.h"

namespace dtl {

// The model's tensors as this rank holds them; a replicated one saved by tp rank 0 only, and
// none at all when `saves` is false (a data-parallel or context-parallel replica).
std::vector<HeldTensor> gpt_held_tensors(const Gpt& model, bool saves = true);
// fp32 only (UsageError otherwise: the master and the 16-bit copy are not saved yet): the
// parameters and `opt`'s m and v (an AdamW over whole_params()) on the host, and back.
HeldState gpt_host_state(Gpt& model, const Optimizer& opt);
// `step`: the steps the optimizer has applied (its bias correction).
void set_gpt_state(Gpt& model, Optimizer& opt, const HeldState& st, int step);
// --resume's rules for the GPT on the counting task (labs/train/data.h: step k's B sequences
// drawn from k alone): the tensor_parallel, context_parallel and grid labs read each other's.
ResumeRules counting_gpt_resume_rules(int batch, int train_steps);
// Both: this rank's pieces, and reading its slices back. Returns the bytes read.
StagedPieces stage_gpt_checkpoint(Gpt& model, const Optimizer& opt, bool saves = true);
std::size_t load_gpt_sharded(const Manifest& m, Gpt& model, Optimizer& opt);

}  // namespace dtl
