#include "kernels/cuda/session.h"

#include <algorithm>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/device.h"

namespace dtl::cuda {

GpuSession::GpuSession(int device) {
  const Devices devices = probe_devices();
  require_devices(devices);
  const int gpu = device_for_rank(device, devices);
  DTL_CUDA_CHECK(cudaSetDevice(gpu));
  DTL_CUDA_CHECK(cudaGetDeviceProperties(&props_, gpu));
  DTL_CUDA_CHECK(cudaStreamCreate(&stream_));
  DTL_CUBLAS_CHECK(cublasCreate(&blas_));
  DTL_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
}

GpuSession::~GpuSession() {  // destructors must not throw: errors here are ignored
  if (blas_) (void)cublasDestroy(blas_);
  if (stream_) (void)cudaStreamDestroy(stream_);
}

EventTimer::EventTimer(cudaStream_t stream) : stream_(stream) {
  DTL_CUDA_CHECK(cudaEventCreate(&start_));
  DTL_CUDA_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  (void)cudaEventDestroy(start_);
  (void)cudaEventDestroy(stop_);
}

double EventTimer::mean_seconds(int runs, const std::function<void()>& fn) {
  DTL_CUDA_CHECK(cudaEventRecord(start_, stream_));
  for (int i = 0; i < runs; ++i) fn();
  DTL_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  DTL_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  DTL_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return double(ms) * 1e-3 / runs;
}

double EventTimer::best_seconds(int runs, const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < runs; ++i) best = std::min(best, mean_seconds(1, fn));
  return best;
}

}  // namespace dtl::cuda
