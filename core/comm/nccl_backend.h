// The NCCL backend: one GPU per rank, buffers in device memory.
//
//   dtlab run collectives --backend nccl --algo ring --bytes 256M            # one process, a thread per GPU
//   mpirun -np 16 dtlab run collectives --backend nccl --bytes 1G --trace r.json   # a process per GPU
//   srun -N 2 --ntasks-per-node 8 --gpus-per-task 1 dtlab run collectives --backend nccl
//
// Bootstrap: started by mpirun/srun (more than one process), rank 0 creates the NCCL unique
// id and broadcasts it over MPI, and each process joins with ncclCommInitRank on GPU
// (local rank mod GPUs on its node). Otherwise one process drives every GPU of the node,
// one thread per GPU, from ncclCommInitAll.
//
// Mapping: library collectives → ncclAllReduce & co. (avg: a sum, then one division, as on
// every backend, so results match the others bit for bit on exact inputs); send/recv →
// ncclSend/ncclRecv, posted as one NCCL group when the rank first waits, so the lab
// algorithms' "post the receive, post the send, wait for both" never deadlocks (NCCL
// matches messages per peer pair in posting order; tags only label the trace);
// recv_reduce → ncclRecv into a staging buffer, then the reduction kernel; split →
// ncclCommSplit. Host buffers (a lab's small report reductions) are staged through the GPU.
//
// Events carry device time: each operation is bracketed by CUDA events on the rank's
// stream, converted to the trace's host clock through an anchor event recorded at start.
//
// Failure: a rank that fails aborts its communicator (ncclCommAbort); every wait polls
// ncclCommGetAsyncError and its deadline (--timeout), so peers stop with an error naming
// the problem instead of hanging. Under MPI the failing rank then calls MPI_Abort.
#pragma once

#include <functional>
#include <string>

#include "core/comm/comm.h"
#include "core/comm/threads_backend.h"  // FaultPlan, RunResult

namespace dtl {

class Trace;

// True when this build has the NCCL backend (CUDA toolkit and NCCL found).
bool nccl_backend_built();

// GPUs this process sees; 0 with `problem` set (in words) when none can be used.
int nccl_visible_gpus(std::string* problem);

struct NcclOptions {
  int ranks = -1;          // one process: how many GPUs (ranks) to drive; -1: all of them
  Trace* trace = nullptr;  // events (null: tracing off)
  FaultPlan faults;
  double timeout_s = 60;   // a wait longer than this aborts the communicator
  std::string trace_path;  // where a failing rank (MPI launch) dumps its partial trace
};

// One process, one thread per GPU (ncclCommInitAll). Never throws for a rank's failure:
// the result names it. Needs the CUDA DeviceOps installed (dtl::cuda::use_cuda_memory()).
RunResult run_nccl_threads(const NcclOptions& options, const std::function<void(Comm&)>& body);

// One process per rank under mpirun/srun: the unique id is broadcast over MPI. A failure
// on any rank aborts the job (exit code 1, or 2 for a usage error), as the MPI backend.
RunResult run_nccl_mpi(const NcclOptions& options, const std::function<void(Comm&)>& body);

}  // namespace dtl
