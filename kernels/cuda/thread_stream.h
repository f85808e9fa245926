// The calling thread's CUDA stream (and cuBLAS handle on it) for each GPU: a rank's own
// queue, so ranks sharing a GPU do not serialize on one stream. DeviceOps' copies and
// reductions and the model's kernels (TrainOps) use the same stream of a thread, so they
// run in the order the thread issued them. Both are destroyed when the thread ends.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace dtl::cuda {

// Selects `device` for the calling thread and returns its stream there.
cudaStream_t this_thread_stream(int device);
// A cuBLAS handle bound to this_thread_stream(device).
cublasHandle_t this_thread_blas(int device);
// Waits for every stream of the calling thread (each GPU it used).
void synchronize_this_thread_streams();

}  // namespace dtl::cuda
