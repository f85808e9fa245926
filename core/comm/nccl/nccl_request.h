// Inside the NCCL backend: the communicator handle, device scratch, the CUDA events that
// time an operation on the GPU, the group of point-to-point operations not yet handed to
// NCCL, and the request a rank waits on (polling NCCL's asynchronous errors).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/comm/nccl/nccl_comm.h"
#include "core/cuda/check.h"
#include "core/cuda/nccl_check.h"
#include "core/trace/event.h"

namespace dtl::nccl {

// The communicator, shared by a Comm and its requests: destroyed with the last of them, or
// aborted once when an operation failed (peers then see an error, not a hang).
struct Handle {
  ncclComm_t comm = nullptr;
  bool aborted = false;
  void abort() noexcept {
    if (aborted) return;
    aborted = true;
    (void)ncclCommAbort(comm);  // its result cannot change what happens next
  }
  ~Handle() {
    if (!aborted && comm) {
      const ncclResult_t r = ncclCommDestroy(comm);
      if (r != ncclSuccess) std::fprintf(stderr, "dtlab: ncclCommDestroy failed: %s\n", ncclGetErrorString(r));
    }
  }
};

// Device memory on the rank's stream, freed (stream-ordered) with the last owner.
struct Scratch {
  void* p = nullptr;
  cudaStream_t stream;
  Scratch(std::size_t bytes, cudaStream_t s) : stream(s) {
    if (bytes) DTL_CUDA_CHECK(cudaMallocAsync(&p, bytes, s));
  }
  ~Scratch() {
    if (p) (void)cudaFreeAsync(p, stream);
  }
};

// Two CUDA events around work on the rank's stream: its device time.
struct GpuSpan {
  cudaEvent_t begin = nullptr, end = nullptr;
  GpuSpan() {
    DTL_CUDA_CHECK(cudaEventCreate(&begin));
    DTL_CUDA_CHECK(cudaEventCreate(&end));
  }
  ~GpuSpan() {
    (void)cudaEventDestroy(begin);
    (void)cudaEventDestroy(end);
  }
};

// Point-to-point operations posted since the last wait: NCCL gets them as one group.
struct PendingGroup {
  struct Op {
    bool send;
    void* buf;
    std::size_t bytes;
    int peer;
  };
  std::vector<Op> ops;
  std::shared_ptr<GpuSpan> span = std::make_shared<GpuSpan>();
  bool launched = false;

  void launch(RankState& st, ncclComm_t comm);  // once: ncclGroupStart, the sends and receives, ncclGroupEnd
};

class NcclRequest final : public RequestImpl {
 public:
  NcclRequest(RankState& st, std::shared_ptr<Handle> h, std::shared_ptr<GpuSpan> span, std::string what)
      : st_(st), h_(std::move(h)), span_(std::move(span)), what_(std::move(what)) {}
  std::function<void()> launch;       // hands this request's group to NCCL (point-to-point)
  std::function<void()> on_complete;  // reduce from staging, copy to host, average
  Event ev;
  bool traced = false;

  void wait() override;
  bool test() override;
  void settle() noexcept override {
    try {
      wait();  // bounded: the deadline or a peer's failure ends it
    } catch (...) {}
  }

 private:
  // True once the end event completed; throws (after aborting the communicator) on an
  // asynchronous NCCL error, a failed peer in this process, or the deadline.
  bool finished_on_gpu(std::chrono::steady_clock::time_point start);
  void finish();
  RankState& st_;
  std::shared_ptr<Handle> h_;
  std::shared_ptr<GpuSpan> span_;
  std::string what_;
  bool done_ = false;
};

}  // namespace dtl::nccl
