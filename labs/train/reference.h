// The one-rank reference of the MLP labs (DDP, ZeRO, pipeline): the same model trained
// by one process on the whole global batch, step for step, on a device of its own —
// what N ranks together must equal (within the sum order of their reductions). It runs
// on the device the ranks use, so its step time is the 1-GPU baseline of a GPU run.
#pragma once

#include <functional>
#include <vector>

#include "labs/train/data.h"
#include "labs/train/mlp.h"
#include "labs/train/optimizer.h"

namespace dtl {

struct MlpReferenceConfig {
  MlpShape shape;
  DType precision = DType::f32;                // f32, or bf16/f16 mixed precision
  MasterWeights master = MasterWeights::keep;  // mixed precision: keep an fp32 master
  kernels::AdamWConfig adamw;
  int batch = 0;   // the global batch: rows [step·batch, (step+1)·batch) of the data
  int steps = 0;   // training steps, the first a warm-up
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

}  // namespace dtl
