// A device buffer holding a copy of a host vector, for the GPU tests; read() waits for the
// device and brings it back.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "core/cuda/check.h"

namespace dtl::test {

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit DeviceBuffer(const std::vector<T>& host) : n(host.size()) {
    DTL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(T) + 1));  // + 1: never a 0-byte malloc
    DTL_CUDA_CHECK(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { (void)cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<T> read() const {
    std::vector<T> host(n);
    DTL_CUDA_CHECK(cudaDeviceSynchronize());
    DTL_CUDA_CHECK(cudaMemcpy(host.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
};

}  // namespace dtl::test
