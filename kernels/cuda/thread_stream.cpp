#include "kernels/cuda/thread_stream.h"

#include <map>

#include "kernels/cuda/cublas_check.h"

namespace dtl::cuda {

namespace {

// This thread's streams and cuBLAS handles, one per GPU, destroyed when the thread ends
// (at process exit CUDA may be gone already, so the results are not checked there).
struct ThreadQueues {
  std::map<int, cudaStream_t> streams;
  std::map<int, cublasHandle_t> blas;
  ~ThreadQueues() {
    for (auto& [device, handle] : blas) (void)cublasDestroy(handle);
    for (auto& [device, stream] : streams) (void)cudaStreamDestroy(stream);
  }
};

ThreadQueues& queues() {
  thread_local ThreadQueues q;
  return q;
}

}  // namespace

cudaStream_t this_thread_stream(int device) {
  DTL_CUDA_CHECK(cudaSetDevice(device));
  auto& streams = queues().streams;
  auto it = streams.find(device);
  if (it != streams.end()) return it->second;
  cudaStream_t s = nullptr;
  DTL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  streams[device] = s;
  return s;
}

void synchronize_this_thread_streams() {
  for (auto& [device, stream] : queues().streams) DTL_CUDA_CHECK(cudaStreamSynchronize(stream));
}

cublasHandle_t this_thread_blas(int device) {
  const cudaStream_t s = this_thread_stream(device);
  auto& blas = queues().blas;
  auto it = blas.find(device);
  if (it != blas.end()) return it->second;
  cublasHandle_t h = nullptr;
  DTL_CUBLAS_CHECK(cublasCreate(&h));
  DTL_CUBLAS_CHECK(cublasSetStream(h, s));
  blas[device] = h;
  return h;
}

}  // namespace dtl::cuda
