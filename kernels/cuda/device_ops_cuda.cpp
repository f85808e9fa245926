// DeviceOps for GPU memory: what the threads backend, finish_average, scale_in_place and
// the labs call when a buffer lives on a GPU (core/memory/device_ops.h).
//
// Each calling thread (a rank, or a rank's comm stream) gets its own CUDA stream per GPU,
// so ranks sharing a GPU do not serialize on one stream. Every operation waits for its
// stream before returning: callers see the same "done when it returns" as memcpy.
// Copies use cudaMemcpyDefault (unified addressing tells host from device, and which
// GPU), so host↔device, device↔device and GPU↔GPU are one call.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "core/cuda/check.h"
#include "core/memory/device_ops.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/thread_stream.h"

namespace dtl::cuda {

namespace {

// The GPU p is on, or -1 for host memory (pageable or pinned).
int gpu_of(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not a pointer CUDA knows: host memory
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

class CudaOps final : public DeviceOps {
 public:
  explicit CudaOps(int count) : count_(count) {}
  std::string name() const override { return "cuda"; }
  bool owns(const void* p) const override { return gpu_of(p) >= 0; }
  int device_count() const override { return count_; }
  int index_of(const void* p) const override { return std::max(gpu_of(p), 0); }

  void* allocate(std::size_t bytes, int index) override {
    if (bytes == 0) return nullptr;
    const cudaStream_t s = this_thread_stream(index);
    void* p = nullptr;
    DTL_CUDA_CHECK(cudaMalloc(&p, bytes));
    DTL_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, s));
    DTL_CUDA_CHECK(cudaStreamSynchronize(s));
    ledger_.add(p, bytes);
    return p;
  }

  void release(void* p) noexcept override {
    ledger_.remove(p);
    const cudaError_t e = cudaFree(p);
    if (e != cudaSuccess)  // cannot throw from here (destructors); say it
      std::fprintf(stderr, "dtlab: cudaFree failed: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0 || dst == src) return;
    const int d = gpu_of(dst), from = gpu_of(src);
    const cudaStream_t s = this_thread_stream(d >= 0 ? d : std::max(from, 0));
    DTL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
    DTL_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  void reduce_many(void* out, const void* const* inputs, int n, std::size_t count, DType t, ReduceOp op) override {
    const int device = index_of(out);
    const cudaStream_t s = this_thread_stream(device);
    // An input on another GPU (ranks on different GPUs) is staged on this one first: the
    // kernel reads only its own GPU's memory, peer access or not.
    std::vector<const void*> local(inputs, inputs + n);
    std::vector<void*> staged;
    const std::size_t bytes = count * dtype_size(t);
    try {
      for (int k = 0; k < n; ++k) {
        if (gpu_of(inputs[k]) == device) continue;
        void* tmp = nullptr;
        DTL_CUDA_CHECK(cudaMallocAsync(&tmp, bytes, s));
        staged.push_back(tmp);
        DTL_CUDA_CHECK(cudaMemcpyAsync(tmp, inputs[k], bytes, cudaMemcpyDefault, s));
        local[std::size_t(k)] = tmp;
      }
      cuda::reduce_many(out, local.data(), n, count, t, op, s);
    } catch (...) {
      for (void* p : staged) (void)cudaFreeAsync(p, s);
      throw;
    }
    for (void* p : staged) DTL_CUDA_CHECK(cudaFreeAsync(p, s));
    DTL_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  // One kernel when every buffer is on one GPU (at most 32 of each): 2·P·N bytes moved.
  void reduce_many_to(void* const* outputs, int n_out, const void* const* inputs, int n_in, std::size_t count, DType t,
                      ReduceOp op) override {
    const int device = index_of(outputs[0]);
    bool one_gpu = n_out <= 32 && n_in <= 32;
    for (int k = 0; k < n_in && one_gpu; ++k) one_gpu = gpu_of(inputs[k]) == device;
    for (int k = 0; k < n_out && one_gpu; ++k) one_gpu = gpu_of(outputs[k]) == device;
    if (!one_gpu) return DeviceOps::reduce_many_to(outputs, n_out, inputs, n_in, count, t, op);
    const cudaStream_t s = this_thread_stream(device);
    cuda::reduce_many_to(outputs, n_out, inputs, n_in, count, t, op, s);
    DTL_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  void scale(void* buf, std::size_t count, DType t, double factor, int divisor) override {
    const cudaStream_t s = this_thread_stream(index_of(buf));
    if (divisor > 0)
      cuda::finish_average(buf, count, t, ReduceOp::avg, divisor, s);
    else
      scale_floating(buf, count, t, factor, s);
    DTL_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  std::size_t bytes_allocated_by_this_thread() const override { return ledger_.of_this_thread(); }
  void synchronize_this_thread() override { synchronize_this_thread_streams(); }

 private:
  int count_;
  AllocationLedger ledger_;
};

}  // namespace

void use_cuda_memory() {
  const Devices devices = probe_devices();
  require_devices(devices);
  static CudaOps ops(devices.count);
  install_cuda_ops(&ops);
}

}  // namespace dtl::cuda
