// A stand-in GPU for machines without one: "device" memory whose bytes are stored XOR a
// key that differs from allocation to allocation and from byte to byte, so any code that
// reads or writes it directly from the host (a memcpy, even between two device buffers, a
// host reduction, finish_average on the host path) sees or leaves garbage, and a
// bit-exact check fails. Only its DeviceOps methods unscramble. Installed as the cuda ops for the
// lifetime of a ScrambledDeviceScope; it reports two GPUs so rank → GPU mapping varies.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl::test {

class ScrambledDeviceOps final : public DeviceOps {
 public:
  std::string name() const override { return "scrambled"; }
  int device_count() const override { return 2; }
  bool owns(const void* p) const override { return find(p).has_value(); }
  int index_of(const void* p) const override { return find(p).value_or(Block{0, 0, 0}).device; }

  void* allocate(std::size_t bytes, int index) override {
    if (bytes == 0) return nullptr;
    auto* p = static_cast<unsigned char*>(std::malloc(bytes));
    std::lock_guard lock(mu_);
    const Block b{bytes, index, next_id_++};
    for (std::size_t i = 0; i < bytes; ++i) p[i] = key(b, i);  // zeroed, as stored here
    blocks_[p] = b;
    return p;
  }
  void release(void* p) noexcept override {
    {
      std::lock_guard lock(mu_);
      blocks_.erase(static_cast<unsigned char*>(p));
    }
    std::free(p);
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    ++copies;
    std::vector<unsigned char> plain(bytes);
    std::memcpy(plain.data(), src, bytes);
    if (owns(src)) xor_key(plain.data(), src, bytes);
    if (owns(dst)) xor_key(plain.data(), dst, bytes);
    std::memcpy(dst, plain.data(), bytes);
  }

  void reduce_many(void* out, const void* const* inputs, int n, std::size_t count, DType t, ReduceOp op) override {
    ++reductions;
    const std::size_t bytes = count * dtype_size(t);
    std::vector<std::vector<unsigned char>> plain(static_cast<std::size_t>(n), std::vector<unsigned char>(bytes));
    std::vector<const void*> ptrs;
    for (int k = 0; k < n; ++k) {
      if (!owns(inputs[k])) throw Error("scrambled device: reduce_many got a host input");
      std::memcpy(plain[std::size_t(k)].data(), inputs[k], bytes);
      xor_key(plain[std::size_t(k)].data(), inputs[k], bytes);
      ptrs.push_back(plain[std::size_t(k)].data());
    }
    std::vector<unsigned char> result(bytes);
    host_ops().reduce_many(result.data(), ptrs.data(), n, count, t, op);
    xor_key(result.data(), out, bytes);
    std::memcpy(out, result.data(), bytes);
  }

  void scale(void* buf, std::size_t count, DType t, double factor, int divisor) override {
    ++scalings;
    const std::size_t bytes = count * dtype_size(t);
    std::vector<unsigned char> plain(bytes);
    std::memcpy(plain.data(), buf, bytes);
    xor_key(plain.data(), buf, bytes);
    host_ops().scale(plain.data(), count, t, factor, divisor);
    xor_key(plain.data(), buf, bytes);
    std::memcpy(buf, plain.data(), bytes);
  }

  std::atomic<long> copies{0}, reductions{0}, scalings{0};

 private:
  struct Block {
    std::size_t bytes;
    int device;
    unsigned id;
  };
  // Never 0 (which would store a byte as itself); differs between blocks and offsets.
  static unsigned char key(const Block& b, std::size_t offset) {
    return static_cast<unsigned char>(0x80u | ((b.id * 29u + unsigned(offset) * 7u) & 0x7Fu));
  }
  // Toggles n bytes of `data` between plain and how they are stored at device address `at`.
  void xor_key(unsigned char* data, const void* at, std::size_t n) const {
    const auto* a = static_cast<const unsigned char*>(at);
    std::lock_guard lock(mu_);
    auto it = std::prev(blocks_.upper_bound(const_cast<unsigned char*>(a)));
    const std::size_t base = std::size_t(a - it->first);
    for (std::size_t i = 0; i < n; ++i) data[i] ^= key(it->second, base + i);
  }
  std::optional<Block> find(const void* p) const {
    const auto* c = static_cast<const unsigned char*>(p);
    std::lock_guard lock(mu_);
    auto it = blocks_.upper_bound(const_cast<unsigned char*>(c));
    if (it == blocks_.begin()) return std::nullopt;
    --it;
    if (c < it->first + it->second.bytes) return it->second;
    return std::nullopt;
  }
  mutable std::mutex mu_;
  std::map<unsigned char*, Block> blocks_;
  unsigned next_id_ = 1;
};

// Installs a ScrambledDeviceOps as the cuda ops for this scope.
class ScrambledDeviceScope {
 public:
  ScrambledDeviceScope() : previous_(install_cuda_ops(&ops)) {}
  ~ScrambledDeviceScope() { install_cuda_ops(previous_); }
  ScrambledDeviceScope(const ScrambledDeviceScope&) = delete;
  ScrambledDeviceScope& operator=(const ScrambledDeviceScope&) = delete;
  ScrambledDeviceOps ops;

 private:
  DeviceOps* previous_;
};

}  // namespace dtl::test
