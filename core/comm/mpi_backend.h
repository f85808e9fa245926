// The Open MPI backend: one process per rank, started by mpirun or srun.
//
//   mpirun -np 4 dtlab run collectives --backend mpi --algo ring --bytes 64M --trace ring.json
//
// The same labs run unchanged: point-to-point maps to MPI_Isend/MPI_Irecv, library
// collectives to MPI_Iallreduce & co., split to MPI_Comm_split. Each process records its
// own rank's events; at the end rank 0 gathers them, corrects each rank's clock by an
// offset estimated with a ping-pong (so arrows from a send to its receive point forward
// in time), joins sends to receives, and writes one trace. A rank that fails prints its
// error and calls MPI_Abort, which ends every rank: no hang.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/comm/comm.h"
#include "core/comm/threads_backend.h"  // FaultPlan, RunResult

namespace dtl {

class Trace;

// True when this build has the MPI backend.
bool mpi_backend_built();

struct MpiWorld {
  int rank = 0;
  int size = 1;
};
// MPI_Init_thread once per process (MPI_Finalize runs at exit). Throws if not built.
MpiWorld mpi_init();

struct MpiOptions {
  Trace* trace = nullptr;  // this process's trace, sized to the world (null: tracing off)
  FaultPlan faults;
  double timeout_s = 60;
  std::string trace_path;  // where a failing rank dumps its partial trace (+ ".rank<r>.json")
};

// Runs body(comm) on this process's rank of MPI_COMM_WORLD. Returns normally only when
// this rank succeeded; a failure on any rank aborts the whole job (exit code 1).
RunResult run_mpi(const MpiOptions& options, const std::function<void(Comm&)>& body);

// Collective: gathers every rank's events to rank 0 with clock offsets corrected and
// sends joined to receives. Returns the merged trace on rank 0, nullptr elsewhere.
std::unique_ptr<Trace> merge_traces_on_root(const Trace& local);

// Largest value of v over all processes (for reports that combine ranks).
double mpi_max(double v);

// MPI_Bcast of raw bytes over MPI_COMM_WORLD (the NCCL backend's unique id).
void mpi_broadcast_bytes(void* buf, std::size_t bytes, int root);
// Ends every process of the job with this exit code (MPI_Abort).
[[noreturn]] void mpi_abort(int code);

}  // namespace dtl
