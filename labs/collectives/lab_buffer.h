// The collectives lab's working buffer (labs/collectives/collectives_lab.cpp).
#pragma once

#include <vector>

#include "core/memory/device_ops.h"
#include "core/memory/memory.h"
#include "exercises/collectives.h"

namespace dtl {

// The buffer an algorithm runs on, on the rank's device, and a host mirror when that is a
// GPU: inputs are written on the host and uploaded, results downloaded and checked there.
// On the host the mirror is the buffer itself.
class LabBuffer {
 public:
  LabBuffer(MemoryTracker& mem, std::size_t count, DType t, Device device)
      : tensor_(mem, {std::int64_t(count)}, t, MemTag::comm, device) {
    if (device.kind != Device::Kind::cpu) mirror_.resize(tensor_.bytes());
  }
  ex::BufferView view() { return {tensor_.data(), tensor_.numel(), tensor_.dtype()}; }  // where it lives
  ex::BufferView host() {
    return mirror_.empty() ? view() : ex::BufferView{mirror_.data(), tensor_.numel(), tensor_.dtype()};
  }
  void upload() {
    if (!mirror_.empty()) copy_bytes(tensor_.data(), mirror_.data(), mirror_.size());
  }
  void download() {
    if (!mirror_.empty()) copy_bytes(mirror_.data(), tensor_.data(), mirror_.size());
  }

 private:
  Tensor tensor_;
  std::vector<char> mirror_;
};

}  // namespace dtl
