// The GPT's checkpoints: its full tensors under GPT-2's names in a safetensors file
// (docs/checkpoints.md), so a model trained on T ranks loads on any other T, and in
// PyTorch (tests/python/torch_gpt.py).
//
//   metadata  n_head, n_layer, n_embd, vocab, seq: what the shapes do not say (n_head) and
//             what a reader wants without parsing names
//   save      every rank calls gpt_checkpoint (split tensors are all-gathered), one writes
//   load      every rank reads the file and keeps its own slice: no communication
#pragma once

#include <map>
#include <string>

#include "core/util/safetensors.h"
#include "labs/train/gpt.h"

namespace dtl {

// The model's parameters as full tensors plus the metadata above and `extra` (a step
// count, a lab name). A collective over the model's tp group.
SafeTensors gpt_checkpoint(Gpt& model, const std::map<std::string, std::string>& extra = {});

// Copies every tensor of `ckpt` into the model (this rank's slice). UsageError, naming the
// source and the tensor, when one is missing, has another dtype or shape, or the model has
// no such tensor; or when the metadata's n_head differs from the model's heads. Nothing is
// copied unless everything fits.
void load_gpt_checkpoint(Gpt& model, const SafeTensors& ckpt);

}  // namespace dtl
