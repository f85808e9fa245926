#include "core/memory/standin_device.h"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <vector>

#include "core/error.h"

namespace dtl {

namespace {

// The calling thread's stream: work queued by the stand-in's TrainOps, not yet run.
thread_local std::deque<std::function<void()>> t_stream;

// Never 0 (which would store a byte as itself); differs between blocks and offsets. It
// depends on the offset mod 128 only, so a block's pattern is one 128-byte table.
unsigned char key(unsigned block_id, std::size_t offset) {
  return static_cast<unsigned char>(0x80u | ((block_id * 29u + unsigned(offset & 0x7Fu) * 7u) & 0x7Fu));
}

}  // namespace

int StandInDeviceOps::index_of(const void* p) const {
  const std::optional<Block> b = find(p);
  return b ? b->device : 0;
}

void* StandInDeviceOps::allocate(std::size_t bytes, int index) {
  if (bytes == 0) return nullptr;
  auto* p = static_cast<unsigned char*>(std::malloc(bytes));
  if (!p) throw Error("stand-in device: out of memory allocating " + std::to_string(bytes) + " bytes");
  unsigned id = 0;
  {
    std::lock_guard lock(mu_);
    id = next_id_++;
    blocks_[p] = Block{bytes, index, id};
  }
  for (std::size_t i = 0; i < bytes; ++i) p[i] = key(id, i);  // zeroed, as stored here
  ledger_.add(p, bytes);
  return p;
}

void StandInDeviceOps::release(void* p) noexcept {
  if (!p) return;
  // cudaFree waits for the device: queued work of this thread that uses p runs first.
  try {
    drain_this_thread();
  } catch (...) {  // the work's error belongs to whoever synchronizes; freeing goes on
  }
  ledger_.remove(p);
  {
    std::lock_guard lock(mu_);
    blocks_.erase(static_cast<unsigned char*>(p));
  }
  std::free(p);
}

std::size_t StandInDeviceOps::bytes_allocated_by_this_thread() const { return ledger_.of_this_thread(); }

std::optional<StandInDeviceOps::Block> StandInDeviceOps::find(const void* p) const {
  const auto* c = static_cast<const unsigned char*>(p);
  std::lock_guard lock(mu_);
  auto it = blocks_.upper_bound(c);
  if (it == blocks_.begin()) return std::nullopt;
  --it;
  if (c < it->first + it->second.bytes) return it->second;
  return std::nullopt;
}

void StandInDeviceOps::toggle(unsigned char* data, const void* at, std::size_t n, const char* what) const {
  if (n == 0) return;
  const auto* a = static_cast<const unsigned char*>(at);
  Block b{};
  std::size_t base = 0;
  {
    std::lock_guard lock(mu_);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin() || a >= std::prev(it)->first + std::prev(it)->second.bytes)
      throw Error(std::string("stand-in device: ") + what +
                  " is host memory, not device memory: copy it to the device first (copy_bytes into a Tensor on "
                  "the rank's device)");
    --it;
    b = it->second;
    base = std::size_t(a - it->first);
    if (base + n > b.bytes)
      throw Error(std::string("stand-in device: ") + what + " runs past the end of its allocation (" +
                  std::to_string(base + n) + " > " + std::to_string(b.bytes) + " bytes)");
  }
  unsigned char pattern[128];
  for (std::size_t j = 0; j < 128; ++j) pattern[j] = key(b.id, j);
  for (std::size_t i = 0; i < n; ++i) data[i] ^= pattern[(base + i) & 0x7Fu];
}

void StandInDeviceOps::decode(void* host, const void* device, std::size_t bytes, const char* what) const {
  if (bytes == 0) return;
  std::memcpy(host, device, bytes);
  toggle(static_cast<unsigned char*>(host), device, bytes, what);
}

void StandInDeviceOps::encode(void* device, const void* host, std::size_t bytes, const char* what) const {
  if (bytes == 0) return;
  std::vector<unsigned char> stored(static_cast<const unsigned char*>(host),
                                    static_cast<const unsigned char*>(host) + bytes);
  toggle(stored.data(), device, bytes, what);
  std::memcpy(device, stored.data(), bytes);
}

void StandInDeviceOps::enqueue(std::function<void()> work) { t_stream.push_back(std::move(work)); }

void StandInDeviceOps::drain_this_thread() {
  while (!t_stream.empty()) {
    std::function<void()> work = std::move(t_stream.front());
    t_stream.pop_front();
    try {
      work();
    } catch (...) {
      t_stream.clear();  // a failed kernel: the stream's later work never runs (a sticky error)
      throw;
    }
  }
}

void StandInDeviceOps::copy(void* dst, const void* src, std::size_t bytes) {
  drain_this_thread();  // ordered after this thread's queued work, as cudaMemcpy on its stream
  if (bytes == 0 || dst == src) return;
  ++copies;
  std::vector<unsigned char> plain(bytes);
  if (owns(src))
    decode(plain.data(), src, bytes, "copy's source");
  else
    std::memcpy(plain.data(), src, bytes);
  if (owns(dst))
    encode(dst, plain.data(), bytes, "copy's destination");
  else
    std::memcpy(dst, plain.data(), bytes);
}

void StandInDeviceOps::reduce_many(void* out, const void* const* inputs, int n, std::size_t count, DType t,
                                   ReduceOp op) {
  drain_this_thread();
  ++reductions;
  const std::size_t bytes = count * dtype_size(t);
  std::vector<std::vector<unsigned char>> plain(static_cast<std::size_t>(n), std::vector<unsigned char>(bytes));
  std::vector<const void*> ptrs;
  for (int k = 0; k < n; ++k) {
    decode(plain[std::size_t(k)].data(), inputs[k], bytes, "reduce_many's input");
    ptrs.push_back(plain[std::size_t(k)].data());
  }
  std::vector<unsigned char> result(bytes);
  host_ops().reduce_many(result.data(), ptrs.data(), n, count, t, op);
  encode(out, result.data(), bytes, "reduce_many's output");
}

void StandInDeviceOps::scale(void* buf, std::size_t count, DType t, double factor, int divisor) {
  drain_this_thread();
  ++scalings;
  const std::size_t bytes = count * dtype_size(t);
  std::vector<unsigned char> plain(bytes);
  decode(plain.data(), buf, bytes, "scale's buffer");
  host_ops().scale(plain.data(), count, t, factor, divisor);
  encode(buf, plain.data(), bytes, "scale's buffer");
}

StandInDeviceOps& standin_device() {
  static StandInDeviceOps ops;
  return ops;
}

StandInDeviceScope::StandInDeviceScope() : ops(standin_device()), previous_(install_cuda_ops(&ops)) {}
StandInDeviceScope::~StandInDeviceScope() { install_cuda_ops(previous_); }

}  // namespace dtl
