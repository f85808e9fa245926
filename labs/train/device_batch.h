// A batch's rows where the model computes: the inputs x, the targets y and the loss
// gradient dL/dy, in Tensors on the model's device, tagged data in the rank's
// MemoryTracker. The data set lives on the host; this is the one way its rows reach a
// model, on every device (on the CPU the same copy: one code path), as a PyTorch loop's
// `x.to(device)`. The loss and its gradient are computed on the device too.
#pragma once

#include "core/memory/memory.h"
#include "labs/train/data.h"
#include "labs/train/train_ops.h"

namespace dtl {

class DeviceBatch {
 public:
  // Room for `rows` rows of `in` inputs and `out` targets.
  DeviceBatch(MemoryTracker& mem, Device device, int in, int out, int rows);
  // The bytes such a batch allocates (memory estimates): x, y and dy.
  static double bytes(int in, int out, int rows) { return 4.0 * rows * (double(in) + 2.0 * out); }

  // Copies rows [first_row, first_row + rows) of the data set onto the device.
  void load(const Dataset& data, int first_row, int rows);
  const float* x() const { return x_.as<float>(); }
  const float* y() const { return y_.as<float>(); }
  float* dy() { return dy_.as<float>(); }
  int rows() const { return rows_; }
  std::size_t out_elements() const { return std::size_t(rows_) * std::size_t(out_); }

  // The MSE loss of `pred` (the model's output, on the device) against the loaded targets;
  // writes dL/dpred × `grad_scale` into dy() (a mean over the loaded rows times the loss
  // scale, or divided by the micro-batches). Returns the loss (the device is waited for).
  float mse_loss(TrainOps& ops, const float* pred, float grad_scale);

 private:
  int in_, out_, capacity_, rows_ = 0;
  Tensor x_, y_, dy_;
};

}  // namespace dtl
