// cuBLAS, loaded on first use. Linking libcublas makes every start of dtlab (and of each
// test process) pay libcublasLt's own start-up: 0.40 s and 210 MB of memory, measured on
// the 2-core VM with an empty main(), though most runs never touch a GPU. So dtl::cuda does
// not link cuBLAS: it defines the seven cuBLAS entry points it calls (the names cublas_v2.h
// maps cublasCreate, cublasSgemm, ... to) and each forwards to the real one, found with
// dlopen/dlsym the first time any of them is called. A machine without cuBLAS gets
// dtl::Error saying what to install, at the first GEMM on a GPU, not at start-up.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

#include "core/error.h"

namespace {

// The library found when dtlab was configured (DTL_CUBLAS_LIBRARY, a full path), else its
// soname through the loader's search (LD_LIBRARY_PATH, the run path, ld.so.cache).
void* cublas_library() {
  static void* const handle = [] {
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* h = nullptr;
#ifdef DTL_CUBLAS_LIBRARY
    h = dlopen(DTL_CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
#endif
    if (!h) h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = dlerror();
      throw dtl::Error("cuBLAS could not be loaded (" + soname + ": " + (why ? why : "not found") +
                       "): install the CUDA toolkit's cuBLAS, or add the folder that holds it to LD_LIBRARY_PATH");
    }
    return h;
  }();
  return handle;
}

// The real entry point `name`, typed as the declaration in cublas_api.h that `Fn` names.
template <typename Fn>
Fn real(const char* name) {
  void* f = dlsym(cublas_library(), name);
  if (!f)
    throw dtl::Error(std::string("cuBLAS has no ") + name +
                     ": its version differs from the headers dtlab was built with (" +
                     std::to_string(CUBLAS_VER_MAJOR) + ".x); rebuild dtlab against the installed toolkit");
  return reinterpret_cast<Fn>(f);
}

}  // namespace

// Each forwarder looks its target up once (a function-local static: thread-safe).
#define DTL_CUBLAS_FORWARD(name) static const auto fn = real<decltype(&::name)>(#name)

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  DTL_CUBLAS_FORWARD(cublasCreate_v2);
  return fn(handle);
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  DTL_CUBLAS_FORWARD(cublasDestroy_v2);
  return fn(handle);
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  DTL_CUBLAS_FORWARD(cublasSetStream_v2);
  return fn(handle, stream);
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  DTL_CUBLAS_FORWARD(cublasSetMathMode);
  return fn(handle, mode);
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  DTL_CUBLAS_FORWARD(cublasGetStatusString);
  return fn(status);
}

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
                                           int n, int k, const float* alpha, const float* A, int lda, const float* B,
                                           int ldb, const float* beta, float* C, int ldc) {
  DTL_CUBLAS_FORWARD(cublasSgemm_v2);
  return fn(handle, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                                                      int m, int n, int k, const float* alpha, const float* A, int lda,
                                                      long long int stride_a, const float* B, int ldb,
                                                      long long int stride_b, const float* beta, float* C, int ldc,
                                                      long long int stride_c, int batches) {
  DTL_CUBLAS_FORWARD(cublasSgemmStridedBatched);
  return fn(handle, ta, tb, m, n, k, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, batches);
}

}  // extern "C"
