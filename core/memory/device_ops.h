// DeviceOps: what the runtime may do to bytes that live on a device, without touching
// them from the host.
//
// A lab buffer may sit in host memory or in GPU memory. The code that moves and combines
// buffers (the threads backend's transfers and library collectives, finish_average,
// scale_in_place, the labs' uploads and checks) asks `device_ops_for(pointer)` and calls
// the answer, so the same lab code runs on either:
//
//   host (default)   memcpy and the CPU reduction kernels of core/comm/dtype.h
//   cuda             cudaMemcpy (host↔device, device↔device, GPU↔GPU) and the CUDA twins
//                    of those kernels (kernels/cuda), installed by the CUDA build when
//                    `--device cuda` is chosen
//
// Every operation is synchronous for the calling thread: when it returns, the bytes have
// moved, as a host memcpy would. (The CUDA implementation runs on a stream of the calling
// thread and waits for it.) That keeps the backends' completion logic the same on both.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "core/comm/dtype.h"
#include "core/memory/memory.h"

namespace dtl {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  virtual std::string name() const = 0;
  // True if p points into memory of this kind (the host answers true for everything).
  virtual bool owns(const void* p) const = 0;

  // How many devices of this kind this process sees (the host: 1).
  virtual int device_count() const = 0;
  // Which device of this kind p is on (the GPU index; 0 for the host).
  virtual int index_of(const void* p) const = 0;
  // `index` chooses the GPU; the memory is zeroed.
  virtual void* allocate(std::size_t bytes, int index) = 0;
  virtual void release(void* p) noexcept = 0;

  // Either side may be host memory or this kind's memory (of any device of the kind).
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // out[i] = in0[i] (op) in1[i] (op) ... in that order, as core's reduce_many; out may
  // alias an input. All buffers in this kind's memory.
  virtual void reduce_many(void* out, const void* const* inputs, int n_inputs, std::size_t count, DType t,
                           ReduceOp op) = 0;
  // The same result into every one of `n_outputs` buffers (an all-reduce's chunk to every
  // rank). This default reduces into the first and copies; a device may do it in one pass.
  virtual void reduce_many_to(void* const* outputs, int n_outputs, const void* const* inputs, int n_inputs,
                              std::size_t count, DType t, ReduceOp op);
  // buf[i] *= factor (floating types), or buf[i] /= divisor when divisor > 0 (any type,
  // integers truncate): the two ways a sum becomes an average.
  virtual void scale(void* buf, std::size_t count, DType t, double factor, int divisor) = 0;

  // The bytes of this kind's memory that the calling thread allocated through these ops and
  // that are still allocated: the device's own count, which a rank's MemoryTracker must
  // match (every lab buffer goes through the tracker; scratch space is freed before a check).
  virtual std::size_t bytes_allocated_by_this_thread() const = 0;

  // Waits until the device work the calling thread queued (its streams) has finished.
  virtual void synchronize_this_thread() = 0;
};

// Which thread allocated which live block, for bytes_allocated_by_this_thread().
class AllocationLedger {
 public:
  void add(const void* p, std::size_t bytes);
  void remove(const void* p);
  std::size_t of_this_thread() const;

 private:
  struct Entry {
    std::size_t bytes;
    const void* thread;
  };
  mutable std::mutex mu_;
  std::map<const void*, Entry> blocks_;
  std::map<const void*, std::size_t> by_thread_;
};

// Memcpy and the CPU kernels.
DeviceOps& host_ops();

// The ops that handle Device::Kind::cuda memory. Installs `ops` (not owned; null removes
// it) and returns the previous one. The CUDA build installs its own; tests install a
// stand-in to check that no code path reads device memory from the host.
DeviceOps* install_cuda_ops(DeviceOps* ops);
DeviceOps* cuda_ops();

// The ops for a pointer: the cuda ops if installed and they own it, else the host's.
DeviceOps& device_ops_for(const void* p);
// For a transfer or reduction between two buffers: the device's ops if either is on one.
DeviceOps& device_ops_for(const void* a, const void* b);
// For a Device (throws, saying what to do, when its kind has no ops in this process).
DeviceOps& device_ops(Device device);

// A temporary, zeroed buffer in the same memory as `like` (the host, or like's GPU): the
// staging space an algorithm needs beside the caller's buffer. Not tracked by a
// MemoryTracker (it is the algorithm's, not the lab's). Move-only.
class ScratchBuffer {
 public:
  ScratchBuffer(std::size_t bytes, const void* like);
  ~ScratchBuffer();
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  DeviceOps* ops_;
  void* data_;
  std::size_t bytes_;
};

// Before a backend lets another thread (a comm stream, a peer rank, NCCL's stream) read or
// write a buffer, the kernels this thread queued that produce or use it must be done: every
// backend calls this when an operation is posted, as a GPU framework orders its
// communication stream after the compute stream. A no-op without device memory.
void wait_for_device_work_of_this_thread();

// Convenience: copy `bytes` between any two buffers (host or device, either direction).
void copy_bytes(void* dst, const void* src, std::size_t bytes);

}  // namespace dtl
