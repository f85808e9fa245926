#include "core/memory/memory.h"

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"

namespace dtl {

void* MemoryTracker::allocate(std::size_t bytes, MemTag tag, Device device) {
  void* p = nullptr;
  try {
    p = device_ops(device).allocate(bytes, device.index);  // zeroed (host: prefaulted)
  } catch (const Error& e) {
    throw Error("rank " + std::to_string(rank_) + ": " + e.what() + " (" + mem_tag_name(tag) + ")");
  }
  record_use(bytes, tag);
  return p;
}

void MemoryTracker::release(void* p, std::size_t bytes, MemTag tag, Device device) {
  if (p) device_ops(device).release(p);
  record_return(bytes, tag);
}

void MemoryTracker::record_use(std::size_t bytes, MemTag tag, std::uint16_t label) {
  current_[std::size_t(tag)] += bytes;
  peak_[std::size_t(tag)] = std::max(peak_[std::size_t(tag)], current_[std::size_t(tag)]);
  peak_total_ = std::max(peak_total_, current_total());
  record(EventKind::alloc, bytes, tag, label);
}

void MemoryTracker::record_return(std::size_t bytes, MemTag tag, std::uint16_t label) {
  current_[std::size_t(tag)] -= bytes;
  record(EventKind::free, bytes, tag, label);
}

std::size_t MemoryTracker::current_total() const {
  return std::accumulate(current_.begin(), current_.end(), std::size_t(0));
}

void MemoryTracker::record(EventKind kind, std::size_t bytes, MemTag tag, std::uint16_t label) {
  if (!trace_) return;
  const std::int64_t t = trace_->now_ns();
  trace_->record(
      Event{.begin_ns = t, .end_ns = t, .bytes = bytes, .rank = rank_, .tag = int(tag), .label = label, .kind = kind});
}

Tensor::Tensor(MemoryTracker& tracker, std::vector<std::int64_t> shape, DType dtype, MemTag tag, Device device)
    : tracker_(&tracker), shape_(std::move(shape)), dtype_(dtype), tag_(tag), device_(device) {
  numel_ = 1;
  for (std::int64_t d : shape_) {
    if (d < 0) throw Error("tensor shape has a negative dimension");
    numel_ *= std::size_t(d);
  }
  data_ = tracker_->allocate(bytes(), tag_, device_);
}

Tensor::~Tensor() { reset(); }

void Tensor::reset() {
  if (tracker_) tracker_->release(data_, bytes(), tag_, device_);
  tracker_ = nullptr;
  data_ = nullptr;
}

Tensor::Tensor(Tensor&& o) noexcept { *this = std::move(o); }

Tensor& Tensor::operator=(Tensor&& o) noexcept {
  if (this != &o) {
    reset();
    tracker_ = std::exchange(o.tracker_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    numel_ = o.numel_;
    shape_ = std::move(o.shape_);
    dtype_ = o.dtype_;
    tag_ = o.tag_;
    device_ = o.device_;
  }
  return *this;
}

}  // namespace dtl
