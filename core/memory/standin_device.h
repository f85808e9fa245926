// The stand-in device: a GPU's rules, kept on a CPU, so every lab's device path runs (and
// is checked) on a machine without a GPU. `--device standin` installs it where
// `--device cuda` would install the CUDA ops, so the labs take exactly their GPU code path.
//
// The rules it enforces, and how a violation shows:
//   separate memory     its bytes are stored XOR a key that differs between allocations
//                       and between offsets: code that reads device memory from the host
//                       (a memcpy, a host reduction, a CPU kernel) sees garbage, and code
//                       that writes it from the host leaves garbage, so a check fails
//   explicit transfers  only its DeviceOps (copy, reduce_many, scale) and its TrainOps
//                       (labs/train/train_ops_standin.cpp) decode and encode
//   streams             its TrainOps work is queued per calling thread, as on a CUDA
//                       stream, and runs when that thread synchronizes, asks for a result
//                       (a loss), or makes a DeviceOps call (which, as on CUDA, is ordered
//                       after the thread's queued work): a buffer handed to another thread
//                       before its producer synchronized still holds its old bytes there
//   device pointers     a kernel given host memory fails at once, naming the operation
//
// It reports two devices, so the mapping of ranks to devices is exercised too.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "core/memory/device_ops.h"

namespace dtl {

class StandInDeviceOps final : public DeviceOps {
 public:
  std::string name() const override { return "standin"; }
  int device_count() const override { return 2; }
  bool owns(const void* p) const override { return find(p).has_value(); }
  int index_of(const void* p) const override;

  void* allocate(std::size_t bytes, int index) override;
  void release(void* p) noexcept override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void reduce_many(void* out, const void* const* inputs, int n, std::size_t count, DType t, ReduceOp op) override;
  void scale(void* buf, std::size_t count, DType t, double factor, int divisor) override;
  std::size_t bytes_allocated_by_this_thread() const override;
  void synchronize_this_thread() override { drain_this_thread(); }

  // For the stand-in's TrainOps: device bytes as plain bytes on the host, and back.
  // `what` names the operation and argument for the error when p is not device memory.
  void decode(void* host, const void* device, std::size_t bytes, const char* what) const;
  void encode(void* device, const void* host, std::size_t bytes, const char* what) const;
  // Queues work on the calling thread's stream; drain runs what is queued, in order.
  void enqueue(std::function<void()> work);
  void drain_this_thread();

  // How often each DeviceOps operation ran (tests check the device path was taken).
  std::atomic<long> copies{0}, reductions{0}, scalings{0};

 private:
  struct Block {
    std::size_t bytes;
    int device;
    unsigned id;
  };
  std::optional<Block> find(const void* p) const;
  // Toggles n bytes of `data` between plain and how they are stored at device address `at`.
  void toggle(unsigned char* data, const void* at, std::size_t n, const char* what) const;
  mutable std::mutex mu_;
  std::map<const unsigned char*, Block> blocks_;
  unsigned next_id_ = 1;
  AllocationLedger ledger_;
};

// The process's stand-in (created on first use).
StandInDeviceOps& standin_device();

// Installs the stand-in for this scope as the ops of Device::Kind::cuda memory (tests);
// `--device standin` installs it for the whole run (labs/train: use_standin_device()).
class StandInDeviceScope {
 public:
  StandInDeviceScope();
  ~StandInDeviceScope();
  StandInDeviceScope(const StandInDeviceScope&) = delete;
  StandInDeviceScope& operator=(const StandInDeviceScope&) = delete;
  StandInDeviceOps& ops;

 private:
  DeviceOps* previous_;
};

}  // namespace dtl
