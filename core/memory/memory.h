// Device, MemoryTracker and Tensor: where a rank's bytes live and what they are for.
//
// Every Tensor is allocated through its rank's MemoryTracker, which keeps current and
// peak bytes per tag (param, grad, optimizer, activation, comm) and emits alloc/free
// events, so the memory view and the ZeRO formulas (16 / 4+12/N / 2+14/N / 16/N bytes
// per parameter) are checked against what was really allocated.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/comm/dtype.h"
#include "core/trace/event.h"

namespace dtl {

class Trace;

struct Device {
  enum class Kind : std::uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;
  static Device cpu() { return {}; }
  static Device cuda(int i) { return {Kind::cuda, i}; }
  std::string name() const { return kind == Kind::cpu ? "cpu" : "cuda:" + std::to_string(index); }
};

class MemoryTracker {
 public:
  MemoryTracker(int rank, Trace* trace) : rank_(rank), trace_(trace) {}

  // Allocates `bytes` on `device`, 64-byte aligned, and prefaulted (first-touch faults
  // are slow on VMs and would pollute every timing that follows).
  void* allocate(std::size_t bytes, MemTag tag, Device device);
  void release(void* p, std::size_t bytes, MemTag tag, Device device);
  // A caching allocator's accounting (PyTorch's memory_allocated against memory_reserved):
  // `bytes` handed out of, or given back to, memory the caller keeps reserved and reuses,
  // counted and traced like an allocation and a free, without a new one.
  // `label` (a Trace label, 0: none) says whose buffer it is on its alloc and free events:
  // ZeRO-3's gather buffer of layer 3, which `dtlab run --step` draws as gathered or freed.
  void record_use(std::size_t bytes, MemTag tag, std::uint16_t label = 0);
  void record_return(std::size_t bytes, MemTag tag, std::uint16_t label = 0);

  std::size_t current(MemTag t) const { return current_[std::size_t(t)]; }
  std::size_t peak(MemTag t) const { return peak_[std::size_t(t)]; }
  std::size_t current_total() const;
  std::size_t peak_total() const { return peak_total_; }

 private:
  void record(EventKind kind, std::size_t bytes, MemTag tag, std::uint16_t label);
  int rank_;
  Trace* trace_;
  std::array<std::size_t, kNumMemTags> current_{}, peak_{};
  std::size_t peak_total_ = 0;
};

// A contiguous, owning n-d array of one dtype on one device. Move-only.
class Tensor {
 public:
  Tensor() = default;
  Tensor(MemoryTracker& tracker, std::vector<std::int64_t> shape, DType dtype, MemTag tag,
         Device device = Device::cpu());
  ~Tensor();
  Tensor(Tensor&& o) noexcept;
  Tensor& operator=(Tensor&& o) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T>
  T* as() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }
  std::size_t numel() const { return numel_; }
  std::size_t bytes() const { return numel_ * dtype_size(dtype_); }
  std::size_t element_size() const { return dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  MemTag tag() const { return tag_; }
  Device device() const { return device_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }

 private:
  void reset();
  MemoryTracker* tracker_ = nullptr;
  void* data_ = nullptr;
  std::size_t numel_ = 0;
  std::vector<std::int64_t> shape_;
  DType dtype_ = DType::f32;
  MemTag tag_ = MemTag::other;
  Device device_;
};

}  // namespace dtl
