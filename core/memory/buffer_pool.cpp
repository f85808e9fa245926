#include "core/memory/buffer_pool.h"

#include <algorithm>

#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl {

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& o) noexcept {
  if (this == &o) return *this;
  reset();
  pool_ = o.pool_;
  data_ = o.data_;
  bytes_ = o.bytes_;
  block_ = o.block_;
  tag_ = o.tag_;
  label_ = o.label_;
  o.pool_ = nullptr;
  o.data_ = nullptr;
  return *this;
}

void PooledBuffer::reset() {
  if (pool_) pool_->give_back(*this);
  pool_ = nullptr;
  data_ = nullptr;
}

BufferPool::~BufferPool() {
  for (Block& b : blocks_) device_ops(device_).release(b.data);
}

PooledBuffer BufferPool::acquire(std::size_t bytes, MemTag tag, std::size_t counted, std::uint16_t label) {
  if (counted > bytes) throw Error("BufferPool::acquire: counting more bytes than the buffer has");
  // Best fit among the free blocks; a new block when none is large enough.
  std::size_t best = blocks_.size();
  for (std::size_t i = 0; i < blocks_.size(); ++i)
    if (!blocks_[i].in_use && blocks_[i].bytes >= bytes &&
        (best == blocks_.size() || blocks_[i].bytes < blocks_[best].bytes))
      best = i;
  if (best == blocks_.size())
    blocks_.push_back({device_ops(device_).allocate(std::max<std::size_t>(bytes, 1), device_.index), bytes, false});
  Block& b = blocks_[best];
  b.in_use = true;
  in_use_bytes_ += counted;
  mem_.record_use(counted, tag, label);
  PooledBuffer p;
  p.pool_ = this;
  p.data_ = b.data;
  p.bytes_ = counted;
  p.block_ = best;
  p.tag_ = tag;
  p.label_ = label;
  return p;
}

void BufferPool::give_back(const PooledBuffer& p) {
  blocks_[p.block_].in_use = false;
  in_use_bytes_ -= p.bytes_;
  mem_.record_return(p.bytes_, p.tag_, p.label_);
}

std::size_t BufferPool::reserved_bytes() const {
  std::size_t n = 0;
  for (const Block& b : blocks_) n += b.bytes;
  return n;
}

std::size_t BufferPool::idle_bytes() const { return reserved_bytes() - in_use_bytes_; }

}  // namespace dtl
