#include "labs/cli/backend.h"

#include "core/comm/launch_env.h"
#include "core/error.h"

namespace dtl::cli {

namespace {

Backend choose_threads(int requested_ranks) {
  // Under mpirun/srun with several processes, each would run every thread rank on its own.
  if (const auto env = detect_launch_env(); env && env->world_size > 1)
    throw UsageError(env->launcher + " started " + std::to_string(env->world_size) +
                     " processes, but --backend threads runs all ranks inside one process; add --backend mpi "
                     "(one rank per process), or start a single process");
  Backend b;
  b.ranks = requested_ranks == -1 ? 4 : requested_ranks;
  if (b.ranks < 1 || b.ranks > 4096)
    throw UsageError("--ranks must be between 1 and 4096, got " + std::to_string(b.ranks));
  return b;
}

Backend choose_mpi(int requested_ranks) {
  if (!mpi_backend_built())
    throw UsageError("this dtlab was built without MPI; install libopenmpi-dev and rebuild, or use --backend threads");
  const MpiWorld w = mpi_init();
  if (requested_ranks != -1 && requested_ranks != w.size)
    throw UsageError("--ranks " + std::to_string(requested_ranks) + " but mpirun started " + std::to_string(w.size) +
                     " processes; drop --ranks or use mpirun -np " + std::to_string(requested_ranks));
  Backend b;
  b.kind = BackendKind::mpi;
  b.ranks = w.size;
  b.root = w.rank == 0;
  b.multi_process = true;
  return b;
}

Backend choose_nccl(int requested_ranks) {
  if (!nccl_backend_built())
    throw UsageError(
        "this dtlab was built without NCCL (it needs the CUDA toolkit and NCCL at configure time); use "
        "--backend threads or mpi");
  Backend b;
  b.kind = BackendKind::nccl;
  if (const auto env = detect_launch_env(); env && env->world_size > 1) {  // a process per GPU, id over MPI
    if (!mpi_backend_built())
      throw UsageError(env->launcher + " started " + std::to_string(env->world_size) +
                       " processes, but this dtlab was built without MPI, which --backend nccl uses to share NCCL's "
                       "unique id; install libopenmpi-dev and rebuild");
    const MpiWorld w = mpi_init();
    if (requested_ranks != -1 && requested_ranks != w.size)
      throw UsageError("--ranks " + std::to_string(requested_ranks) + " but the launcher started " +
                       std::to_string(w.size) + " processes; drop --ranks");
    b.ranks = w.size;
    b.root = w.rank == 0;
    b.multi_process = true;
    return b;
  }
  std::string problem;  // one process: a thread per GPU
  const int gpus = nccl_visible_gpus(&problem);
  if (gpus == 0)
    throw UsageError("--backend nccl needs GPUs, and this machine has none usable (" + problem +
                     "); use --backend threads or mpi");
  b.ranks = requested_ranks == -1 ? gpus : requested_ranks;
  if (b.ranks < 1 || b.ranks > gpus)
    throw UsageError("--ranks " + std::to_string(b.ranks) +
                     " with --backend nccl needs one GPU per rank, and this "
                     "machine has " +
                     std::to_string(gpus) + "; use --ranks 1.." + std::to_string(gpus) +
                     ", start one process per GPU with mpirun/srun, or --backend threads --device cuda to share GPUs");
  return b;
}

}  // namespace

Backend Backend::choose(const std::string& name, int requested_ranks) {
  const std::optional<BackendKind> kind = parse_backend_kind(name);
  if (!kind) throw UsageError("unknown --backend '" + name + "'; use threads, mpi or nccl");
  switch (*kind) {
    case BackendKind::threads: return choose_threads(requested_ranks);
    case BackendKind::mpi: return choose_mpi(requested_ranks);
    case BackendKind::nccl: return choose_nccl(requested_ranks);
  }
  return {};
}

RunResult Backend::run(const ThreadsOptions& options, const std::string& trace_path,
                       const std::function<void(Comm&)>& body) const {
  if (kind == BackendKind::threads) return run_threads(options, body);
  if (kind == BackendKind::nccl) {
    NcclOptions n;
    n.ranks = ranks;
    n.trace = options.trace;
    n.faults = options.faults;
    n.timeout_s = options.timeout_s;
    n.trace_path = trace_path;
    return multi_process ? run_nccl_mpi(n, body) : run_nccl_threads(n, body);
  }
  MpiOptions m;
  m.trace = options.trace;
  m.faults = options.faults;
  m.timeout_s = options.timeout_s;
  m.trace_path = trace_path;
  return run_mpi(m, body);
}

std::unique_ptr<Trace> Backend::gather(const Trace& local) const {
  if (kind == BackendKind::mpi || multi_process) return merge_traces_on_root(local);
  return nullptr;  // threads: the caller's trace already holds every rank
}

}  // namespace dtl::cli
