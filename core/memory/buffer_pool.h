// A caching pool for short-lived buffers (ZeRO-3's gather buffers, ZeRO-2's gradient buckets,
// the GPT's activations from a block's forward to its backward), the idea of PyTorch's caching allocator: memory is
// reserved once and reused, so a step does not pay for fresh pages (first-touch faults are slow), while the
// MemoryTracker counts a buffer only while it is in use — memory_allocated, not
// memory_reserved. reserved_bytes() is the difference a real run pays on top.
#pragma once

#include <cstddef>
#include <vector>

#include "core/memory/memory.h"

namespace dtl {

class BufferPool;

// A buffer in use, given back to its pool when destroyed. Move-only; it must not outlive its
// pool (the pool's owner keeps both: the GPT's activations die before the GPT).
class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(PooledBuffer&& o) noexcept { *this = std::move(o); }
  PooledBuffer& operator=(PooledBuffer&& o) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer() { reset(); }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }  // as counted by the tracker
  void reset();                                 // give it back now

 private:
  friend class BufferPool;
  BufferPool* pool_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0, block_ = 0;
  MemTag tag_ = MemTag::other;
  std::uint16_t label_ = 0;
};

class BufferPool {
 public:
  BufferPool(MemoryTracker& mem, Device device) : mem_(mem), device_(device) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  // `bytes` bytes, counted under `tag` until the buffer is given back. The contents are
  // whatever the block held last (zero when new): a caller that needs zeros writes them.
  PooledBuffer acquire(std::size_t bytes, MemTag tag) { return acquire(bytes, tag, bytes); }
  // A buffer of `bytes` of which the tracker counts `counted` (≤ bytes): several tensors in
  // one buffer, each starting 64-byte aligned, count their own bytes and not the padding
  // between them — as separate allocations would (MemoryTracker::allocate).
  // `label`: whose buffer it is on its alloc and free events (MemoryTracker::record_use).
  PooledBuffer acquire(std::size_t bytes, MemTag tag, std::size_t counted, std::uint16_t label = 0);
  std::size_t reserved_bytes() const;
  // Reserved bytes the MemoryTracker does not count now: reserved_bytes() minus the bytes
  // of the buffers in use (what a device's own count holds on top of the tracker's).
  std::size_t idle_bytes() const;

 private:
  friend class PooledBuffer;
  struct Block {
    void* data = nullptr;
    std::size_t bytes = 0;
    bool in_use = false;
  };
  std::size_t in_use_bytes_ = 0;
  void give_back(const PooledBuffer& b);
  MemoryTracker& mem_;
  Device device_;
  std::vector<Block> blocks_;
};

}  // namespace dtl
