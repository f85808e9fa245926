// Choosing the backend a command runs on (--backend threads|mpi|nccl), the same way for
// `dtlab run` and `dtlab bench`.
#pragma once

#include <memory>
#include <string>

#include "core/comm/mpi_backend.h"
#include "core/comm/nccl_backend.h"
#include "core/comm/threads_backend.h"
#include "core/trace/trace.h"

namespace dtl::cli {

struct Backend {
  BackendKind kind = BackendKind::threads;
  int ranks = 4;               // world size: --ranks for threads, the process count under mpirun
  bool root = true;            // this process prints and writes files (rank 0 under MPI)
  bool multi_process = false;  // one process per rank (mpi, or nccl under mpirun/srun)

  const char* name() const { return backend_kind_name(kind); }  // "threads", "mpi", "nccl"

  // Parses --backend and resolves the world size; requested_ranks = -1 means "not given".
  static Backend choose(const std::string& name, int requested_ranks);

  // Runs body on every rank (threads, nccl in one process) or on this process's rank.
  RunResult run(const ThreadsOptions& options, const std::string& trace_path,
                const std::function<void(Comm&)>& body) const;

  // The trace to write: `local` for threads; for mpi every rank's events gathered on rank 0
  // (collective: every process must call it). Null on non-root processes.
  std::unique_ptr<Trace> gather(const Trace& local) const;
};

}  // namespace dtl::cli
