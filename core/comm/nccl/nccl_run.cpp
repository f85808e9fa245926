// Starting NCCL ranks: one process driving every GPU (ncclCommInitAll, a thread per GPU),
// or one process per rank under mpirun/srun (the unique id broadcast over MPI).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/comm/launch_env.h"
#include "core/comm/mpi_backend.h"
#include "core/comm/nccl/nccl_comm.h"
#include "core/comm/nccl_backend.h"
#include "core/cuda/check.h"
#include "core/cuda/nccl_check.h"
#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/chrome_writer.h"
#include "core/trace/trace.h"

namespace dtl {

namespace {

void require_device_ops() {
  if (!cuda_ops())
    throw Error(
        "the NCCL backend needs GPU memory support in this process: call dtl::cuda::use_cuda_memory() first "
        "(dtlab does it for --backend nccl)");
}

}  // namespace

bool nccl_backend_built() { return true; }

int nccl_visible_gpus(std::string* problem) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {  // no driver or no GPU: an error, not 0
    (void)cudaGetLastError();
    if (problem)
      *problem = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    return 0;
  }
  if (n == 0 && problem) *problem = "cudaGetDeviceCount found no GPU";
  return n;
}

// The rank count a one-process NCCL run uses: --ranks, or every GPU; one GPU per rank.
int nccl_thread_ranks(const NcclOptions& opt) {
  std::string problem;
  const int gpus = nccl_visible_gpus(&problem);
  if (gpus == 0) throw UsageError("--backend nccl needs GPUs, and this machine has none usable (" + problem + ")");
  const int P = opt.ranks < 0 ? gpus : opt.ranks;
  if (P < 1 || P > gpus)
    throw UsageError("--ranks " + std::to_string(P) +
                     " with --backend nccl needs one GPU per rank, and this process sees " + std::to_string(gpus) +
                     "; use --ranks 1.." + std::to_string(gpus) + ", or --backend threads to share GPUs between ranks");
  return P;
}

RunResult run_nccl_threads(const NcclOptions& opt, const std::function<void(Comm&)>& body) {
  require_device_ops();
  const int P = nccl_thread_ranks(opt);
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(P), nullptr);
  std::vector<int> devices(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) devices[std::size_t(r)] = r;
  DTL_NCCL_CHECK(ncclCommInitAll(comms.data(), P, devices.data()));

  RunResult result;
  result.rank_errors.resize(std::size_t(P));
  std::atomic<int> first_failed{-1};
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(P));
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r) {
    threads.emplace_back([&, r] {
      nccl::RankState st;
      st.world_rank = r;
      st.faults = opt.faults;
      st.timeout_s = opt.timeout_s;
      st.world_failed = &first_failed;
      std::unique_ptr<Comm> world;
      try {
        st.start(r, opt.trace);
        world = nccl::make_world_comm(comms[std::size_t(r)], st);
        comms[std::size_t(r)] = nullptr;  // the Comm owns it now
        body(*world);
      } catch (const std::exception& e) {
        result.rank_errors[std::size_t(r)] = e.what();
        failures[std::size_t(r)] = std::current_exception();
        int expected = -1;
        if (!dynamic_cast<const Aborted*>(&e)) first_failed.compare_exchange_strong(expected, r);
        if (world)
          nccl::abort_world(*world);  // peers blocked in NCCL with this rank see an error
        else if (comms[std::size_t(r)])
          (void)ncclCommAbort(comms[std::size_t(r)]);
      }
      world.reset();
      st.stop();
    });
  }
  for (auto& t : threads) t.join();
  const int f = first_failed.load();
  if (f >= 0) {
    result.failed_rank = f;
    result.error = "rank " + std::to_string(f) + " failed: " + result.rank_errors[std::size_t(f)];
    result.first_failure = failures[std::size_t(f)];
  } else {
    for (int r = 0; r < P && result.error.empty(); ++r)  // only Aborted errors (a deadline)
      if (!result.rank_errors[std::size_t(r)].empty()) {
        result.failed_rank = r;
        result.error = "rank " + std::to_string(r) + ": " + result.rank_errors[std::size_t(r)];
        result.first_failure = failures[std::size_t(r)];
      }
  }
  return result;
}

RunResult run_nccl_mpi(const NcclOptions& opt, const std::function<void(Comm&)>& body) {
  require_device_ops();
  const MpiWorld w = mpi_init();
  std::string problem;
  const int gpus = nccl_visible_gpus(&problem);
  if (gpus == 0)
    throw UsageError("rank " + std::to_string(w.rank) +
                     ": --backend nccl needs a GPU, and this node has none usable (" + problem + ")");
  const std::optional<LaunchEnv> env = detect_launch_env();
  const int local = env ? env->local_rank : w.rank;
  // NCCL refuses two ranks of one communicator on one GPU ("Duplicate GPU detected"): say
  // so before it does, with what to do instead.
  if (local >= gpus)
    throw UsageError("rank " + std::to_string(w.rank) + " is process " + std::to_string(local + 1) +
                     " on its node, which has " + std::to_string(gpus) +
                     " GPU(s): NCCL needs one GPU per rank; start at "
                     "most " +
                     std::to_string(gpus) + " processes per node (mpirun --map-by ppr:" + std::to_string(gpus) +
                     ":node, srun --ntasks-per-node " + std::to_string(gpus) +
                     "), or share GPUs with --backend threads "
                     "--device cuda");
  const int gpu = local;  // one GPU per process on its node

  ncclUniqueId id{};
  if (w.rank == 0) DTL_NCCL_CHECK(ncclGetUniqueId(&id));
  mpi_broadcast_bytes(&id, sizeof id, 0);

  RunResult result;
  result.rank_errors.resize(std::size_t(w.size));
  nccl::RankState st;
  st.world_rank = w.rank;
  st.faults = opt.faults;
  st.timeout_s = opt.timeout_s;
  std::unique_ptr<Comm> world;
  try {
    st.start(gpu, opt.trace);
    ncclComm_t comm = nullptr;
    DTL_NCCL_CHECK(ncclCommInitRank(&comm, w.size, id, w.rank));
    world = nccl::make_world_comm(comm, st);
    body(*world);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "dtlab: rank %d failed: %s\ndtlab: aborting the NCCL communicator and every rank (MPI_Abort)\n",
                 w.rank, e.what());
    if (world) nccl::abort_world(*world);
    if (opt.trace && !opt.trace_path.empty()) {  // what this rank recorded up to the failure
      try {
        write_chrome_trace(*opt.trace, opt.trace_path + ".rank" + std::to_string(w.rank) + ".json", e.what());
      } catch (...) {}
    }
    mpi_abort(dynamic_cast<const UsageError*>(&e) ? 2 : 1);
  }
  world.reset();
  st.stop();
  return result;
}

}  // namespace dtl
