// The NCCL backend's requests and point-to-point groups (see nccl_request.h).
#include "core/comm/nccl/nccl_request.h"

#include <thread>

#include "core/error.h"
#include "core/trace/trace.h"

namespace dtl::nccl {

void PendingGroup::launch(RankState& st, ncclComm_t comm) {
  if (launched) return;
  launched = true;
  DTL_CUDA_CHECK(cudaEventRecord(span->begin, st.stream));
  DTL_NCCL_CHECK(ncclGroupStart());
  try {
    for (const Op& o : ops) {
      if (o.send)
        DTL_NCCL_CHECK(ncclSend(o.buf, o.bytes, ncclUint8, o.peer, comm, st.stream));
      else
        DTL_NCCL_CHECK(ncclRecv(o.buf, o.bytes, ncclUint8, o.peer, comm, st.stream));
    }
  } catch (...) {
    (void)ncclGroupEnd();
    throw;
  }
  DTL_NCCL_CHECK(ncclGroupEnd());
  DTL_CUDA_CHECK(cudaEventRecord(span->end, st.stream));
}

void NcclRequest::wait() {
  if (done_) return;
  if (launch) launch();
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 0; !finished_on_gpu(start); ++spins) {
    if (spins < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  finish();
}

bool NcclRequest::test() {
  if (done_) return true;
  if (launch) launch();
  if (!finished_on_gpu(std::chrono::steady_clock::now())) return false;
  finish();
  return true;
}

bool NcclRequest::finished_on_gpu(std::chrono::steady_clock::time_point start) {
  const cudaError_t e = cudaEventQuery(span_->end);
  if (e == cudaSuccess) return true;
  if (e != cudaErrorNotReady) {
    h_->abort();
    DTL_CUDA_CHECK(e);
  }
  if (h_->aborted)  // another operation of this rank failed first; the communicator is gone
    throw Error("rank " + std::to_string(st_.world_rank) + ": " + what_ +
                " cannot finish: the communicator was aborted");
  ncclResult_t async = ncclSuccess;
  DTL_NCCL_CHECK(ncclCommGetAsyncError(h_->comm, &async));
  if (async != ncclSuccess && async != ncclInProgress) {
    h_->abort();
    throw Error("rank " + std::to_string(st_.world_rank) + ": NCCL reported an error during " + what_ + ": " +
                ncclGetErrorString(async) + "; communicator aborted");
  }
  if (st_.world_failed && st_.world_failed->load() >= 0) {
    h_->abort();
    throw Aborted(st_.world_failed->load(), "rank " + std::to_string(st_.world_failed->load()) + " failed; rank " +
                                                std::to_string(st_.world_rank) + " stopped waiting for " + what_);
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (st_.timeout_s > 0 && waited > st_.timeout_s) {
    h_->abort();
    throw Error("rank " + std::to_string(st_.world_rank) + ": " + what_ + " did not complete within " +
                std::to_string(st_.timeout_s) +
                " s (--timeout): a peer failed or posted a different sequence of "
                "operations; communicator aborted");
  }
  return false;
}

void NcclRequest::finish() {
  done_ = true;
  if (on_complete) on_complete();
  if (traced) {  // the device's begin and end, on the trace's host clock
    ev.begin_ns = st_.host_ns(span_->begin);
    ev.end_ns = st_.host_ns(span_->end);
    st_.trace->record(ev);
  }
}

}  // namespace dtl::nccl
