#include "labs/train/device_batch.h"

#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl {

DeviceBatch::DeviceBatch(MemoryTracker& mem, Device device, int in, int out, int rows)
    : in_(in),
      out_(out),
      capacity_(rows),
      x_(mem, {std::int64_t(rows) * in}, DType::f32, MemTag::data, device),
      y_(mem, {std::int64_t(rows) * out}, DType::f32, MemTag::data, device),
      dy_(mem, {std::int64_t(rows) * out}, DType::f32, MemTag::data, device) {}

void DeviceBatch::load(const Dataset& data, int first_row, int rows) {
  if (rows > capacity_ || data.in != in_ || data.out != out_ || first_row < 0 || first_row + rows > data.samples)
    throw Error("DeviceBatch: rows [" + std::to_string(first_row) + ", " + std::to_string(first_row + rows) +
                ") do not fit a batch of " + std::to_string(capacity_) + " rows from " + std::to_string(data.samples) +
                " samples");
  rows_ = rows;
  copy_bytes(x_.data(), data.x_row(first_row), std::size_t(rows) * std::size_t(in_) * sizeof(float));
  copy_bytes(y_.data(), data.y_row(first_row), out_elements() * sizeof(float));
}

float DeviceBatch::mse_loss(TrainOps& ops, const float* pred, float grad_scale) {
  const float loss = ops.mse_loss(pred, y(), dy(), out_elements());
  if (grad_scale != 1.0f) ops.scale(grad_scale, dy(), out_elements());
  return loss;
}

}  // namespace dtl
