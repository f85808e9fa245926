#include "labs/cli/backend.h"

#include "core/comm/launch_env.h"
#include "core/error.h"

namespace dtl::cli {

Backend Backend::choose(const std::string& name, int requested_ranks) {
  Backend b;
  b.name = name;
  if (name == "threads") {
    // Under mpirun/srun with several processes, each would run every thread rank on its own.
    if (const auto env = detect_launch_env(); env && env->world_size > 1)
      throw UsageError(env->launcher + " started " + std::to_string(env->world_size) +
                       " processes, but --backend threads runs all ranks inside one process; add --backend mpi "
                       "(one rank per process), or start a single process");
    b.ranks = requested_ranks == -1 ? 4 : requested_ranks;
    if (b.ranks < 1 || b.ranks > 4096)
      throw UsageError("--ranks must be between 1 and 4096, got " + std::to_string(b.ranks));
    return b;
  }
  if (name == "mpi") {
    if (!mpi_backend_built())
      throw UsageError("this dtlab was built without MPI; install libopenmpi-dev and rebuild, or use --backend threads");
    const MpiWorld w = mpi_init();
    if (requested_ranks != -1 && requested_ranks != w.size)
      throw UsageError("--ranks " + std::to_string(requested_ranks) + " but mpirun started " + std::to_string(w.size) +
                       " processes; drop --ranks or use mpirun -np " + std::to_string(requested_ranks));
    b.ranks = w.size;
    b.root = w.rank == 0;
    return b;
  }
  if (name == "nccl")
    throw UsageError("--backend nccl is not built yet (it needs CUDA and NCCL support); use --backend threads or mpi");
  throw UsageError("unknown --backend '" + name + "'; use threads or mpi");
}

RunResult Backend::run(const ThreadsOptions& options, const std::string& trace_path,
                       const std::function<void(Comm&)>& body) const {
  if (name == "threads") return run_threads(options, body);
  MpiOptions m;
  m.trace = options.trace;
  m.faults = options.faults;
  m.timeout_s = options.timeout_s;
  m.trace_path = trace_path;
  return run_mpi(m, body);
}

std::unique_ptr<Trace> Backend::gather(const Trace& local) const {
  if (name == "mpi") return merge_traces_on_root(local);
  return nullptr;  // threads: the caller's trace already holds every rank
}

}  // namespace dtl::cli
