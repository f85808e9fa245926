#include "labs/train/reference.h"

#include <chrono>

#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "labs/measure.h"
#include "labs/train/device_batch.h"

namespace dtl {

std::vector<float> unscaled_gradients(const Mlp& model, float loss_scale) {
  std::vector<float> g(model.num_params());
  copy_to_host_floats(model.grad_data(), model.precision(), g);
  for (float& x : g) x /= loss_scale;
  return g;
}

std::vector<float> fp32_weights(const Mlp& model, const AdamW& opt) {
  std::vector<float> w(model.num_params());
  if (opt.master())
    copy_to_host_floats(opt.master(), DType::f32, w);
  else
    copy_to_host_floats(model.param_data(), model.precision(), w);
  return w;
}

MlpReferenceRun train_mlp_reference(const MlpReferenceConfig& c, const Dataset& data,
                                    const std::function<void(int step)>& on_step) {
  using Clock = RunClock;  // a stepped run leaves out the learner's pauses
  MemoryTracker mem(0, nullptr);
  Mlp model(c.shape, mem, 1, c.precision, c.device);
  AdamW opt(whole_model(model), c.device, mem, c.adamw, c.precision == DType::f32 ? MasterWeights::keep : c.master);
  LossScaler scaler(c.precision);
  DeviceBatch batch(mem, c.device, c.shape.in, c.shape.out, c.batch);
  MlpReferenceRun run;
  for (int step = 0; step < c.steps; ++step) {
    if (on_step) on_step(step);
    const auto t0 = Clock::now();
    batch.load(data, step * c.batch, c.batch);
    batch.mse_loss(model.ops(), model.forward(batch.x(), c.batch), scaler.scale());
    model.backward(batch.dy(), false);
    if (step == 0) run.first_gradients = unscaled_gradients(model, scaler.scale());
    scaler.update(opt.step(whole_model(model), 1.0f / scaler.scale()));  // returns when the device is done
    if (step > 0) run.step_seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  run.weights = fp32_weights(model, opt);
  return run;
}

TensorList reference_on_rank0(Comm& world, const std::function<TensorList(Comm& alone)>& train) {
  ScopedSpan phase(world.trace(), world.global_rank(), EventKind::phase,
                   world.trace()->label(kReferencePhaseLabel, kReferenceRole));
  TensorList found;
  std::unique_ptr<Comm> alone = world.split(world.rank() == 0 ? 0 : -1, 0);  // null on the other ranks
  if (alone) found = train(*alone);
  broadcast_tensors(world, found, 0);
  return found;
}

}  // namespace dtl
