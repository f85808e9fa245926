// What a GPU benchmark or rank starts with: its GPU selected, a stream, a cuBLAS handle
// on that stream, and the device's name; and a timer made of two CUDA events.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <functional>

namespace dtl::cuda {

class GpuSession {
 public:
  explicit GpuSession(int device);  // UsageError when there is no usable GPU
  ~GpuSession();
  GpuSession(const GpuSession&) = delete;
  GpuSession& operator=(const GpuSession&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  const char* device_name() const { return props_.name; }

 private:
  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
};

// Device time of work queued on one stream, measured between two CUDA events.
class EventTimer {
 public:
  explicit EventTimer(cudaStream_t stream);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // Seconds per run, averaged over `runs` back-to-back runs of fn.
  double mean_seconds(int runs, const std::function<void()>& fn);
  // The best of `runs` single runs, after one untimed run.
  double best_seconds(int runs, const std::function<void()>& fn);

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace dtl::cuda
