#include "core/memory/device_ops.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace dtl {

namespace {

class HostOps final : public DeviceOps {
 public:
  std::string name() const override { return "host"; }
  bool owns(const void*) const override { return true; }
  int device_count() const override { return 1; }
  int index_of(const void*) const override { return 0; }
  void* allocate(std::size_t bytes, int) override {
    if (bytes == 0) return nullptr;
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes; use a smaller size");
    std::memset(p, 0, rounded);  // prefault every page now, not inside a timed region
    ledger_.add(p, bytes);
    return p;
  }
  void release(void* p) noexcept override {
    ledger_.remove(p);
    std::free(p);
  }
  std::size_t bytes_allocated_by_this_thread() const override { return ledger_.of_this_thread(); }
  void synchronize_this_thread() override {}
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  }
  void reduce_many(void* out, const void* const* inputs, int n, std::size_t count, DType t, ReduceOp op) override {
    if (n == 2 && out == inputs[0]) return reduce_into(out, inputs[1], count, t, op);  // a ring step: in place
    dtl::reduce_many(out, inputs, n, count, t, op);
  }
  void scale(void* buf, std::size_t count, DType t, double factor, int divisor) override {
    if (divisor > 0)
      divide_on_host(buf, count, t, divisor);
    else
      scale_on_host(buf, count, t, factor);
  }

 private:
  AllocationLedger ledger_;
};

HostOps g_host;
thread_local char t_thread_mark;  // its address names the calling thread in a ledger
std::atomic<DeviceOps*> g_cuda{nullptr};

}  // namespace

DeviceOps& host_ops() { return g_host; }

void DeviceOps::reduce_many_to(void* const* outputs, int n_outputs, const void* const* inputs, int n_inputs,
                               std::size_t count, DType t, ReduceOp op) {
  reduce_many(outputs[0], inputs, n_inputs, count, t, op);
  for (int k = 1; k < n_outputs; ++k) copy(outputs[k], outputs[0], count * dtype_size(t));
}

void AllocationLedger::add(const void* p, std::size_t bytes) {
  if (!p) return;
  std::lock_guard lock(mu_);
  blocks_[p] = {bytes, &t_thread_mark};
  by_thread_[&t_thread_mark] += bytes;
}

void AllocationLedger::remove(const void* p) {
  if (!p) return;
  std::lock_guard lock(mu_);
  const auto it = blocks_.find(p);
  if (it == blocks_.end()) return;
  auto owner = by_thread_.find(it->second.thread);
  owner->second -= it->second.bytes;  // a block freed by another thread still leaves its allocator's count
  if (owner->second == 0) by_thread_.erase(owner);
  blocks_.erase(it);
}

std::size_t AllocationLedger::of_this_thread() const {
  std::lock_guard lock(mu_);
  const auto it = by_thread_.find(&t_thread_mark);
  return it == by_thread_.end() ? 0 : it->second;
}

DeviceOps* install_cuda_ops(DeviceOps* ops) { return g_cuda.exchange(ops); }
DeviceOps* cuda_ops() { return g_cuda.load(); }

DeviceOps& device_ops_for(const void* p) {
  DeviceOps* c = g_cuda.load(std::memory_order_acquire);
  return c && p && c->owns(p) ? *c : g_host;
}

DeviceOps& device_ops_for(const void* a, const void* b) {
  DeviceOps* c = g_cuda.load(std::memory_order_acquire);
  return c && ((a && c->owns(a)) || (b && c->owns(b))) ? *c : g_host;
}

DeviceOps& device_ops(Device device) {
  if (device.kind == Device::Kind::cpu) return g_host;
  DeviceOps* c = g_cuda.load(std::memory_order_acquire);
  if (!c) throw Error(device.name() + " memory needs a build with CUDA (DTL_WITH_CUDA) and a GPU; use --device cpu");
  return *c;
}

ScratchBuffer::ScratchBuffer(std::size_t bytes, const void* like)
    : ops_(&device_ops_for(like)), data_(ops_->allocate(bytes, like ? ops_->index_of(like) : 0)), bytes_(bytes) {}

ScratchBuffer::~ScratchBuffer() {
  if (data_) ops_->release(data_);
}

void wait_for_device_work_of_this_thread() {
  if (DeviceOps* c = g_cuda.load(std::memory_order_acquire)) c->synchronize_this_thread();
}

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  device_ops_for(dst, src).copy(dst, src, bytes);
}

}  // namespace dtl
