// The one-rank reference every training lab compares with: the same model trained by one
// process on the whole global batch, step for step — what N ranks together must equal
// (within the sum order of their reductions). The MLP labs (DDP, ZeRO, pipeline) train the
// plain Mlp on every rank's own device (its step time is the 1-GPU baseline of a GPU run);
// the labs whose model is their own parallel code (tensor parallel, grid) run that code on
// a group of one on rank 0 and share what it found (reference_on_rank0).
#pragma once

#include <functional>
#include <vector>

#include "core/comm/comm.h"
#include "labs/train/data.h"
#include "labs/train/mlp.h"
#include "labs/train/optimizer.h"

namespace dtl {

struct MlpReferenceConfig {
  MlpShape shape;
  DType precision = DType::f32;                // f32, or bf16/f16 mixed precision
  MasterWeights master = MasterWeights::keep;  // mixed precision: keep an fp32 master
  kernels::AdamWConfig adamw;
  int batch = 0;  // the global batch: rows [step·batch, (step+1)·batch) of the data
  int steps = 0;  // training steps, the first a warm-up
  Device device;
};

struct MlpReferenceRun {
  std::vector<float> weights;          // after the last step, fp32 (mixed precision: the master)
  std::vector<float> first_gradients;  // of step 0, the loss scale divided out
  std::vector<double> step_seconds;    // every step after step 0, device work included
};

// Trains it; `on_step(step)` is called before each step (progress lines).
// The gradients as fp32 with the loss scale divided out: comparable across precisions and ranks.
std::vector<float> unscaled_gradients(const Mlp& model, float loss_scale);
// The fp32 weights the optimizer updates (mixed precision: its master copy), on the host.
std::vector<float> fp32_weights(const Mlp& model, const AdamW& opt);

MlpReferenceRun train_mlp_reference(const MlpReferenceConfig& c, const Dataset& data,
                                    const std::function<void(int step)>& on_step = {});

// Rank 0 runs `train` on a communicator of its own (a group of one: the lab's parallel code
// with T = 1, D = 1, P = 1) inside the run's reference phase; every rank of `world` returns
// the tensors it returned (losses, gradients, weights, in the order `train` chose).
using TensorList = std::vector<std::vector<float>>;
TensorList reference_on_rank0(Comm& world, const std::function<TensorList(Comm& alone)>& train);

}  // namespace dtl
