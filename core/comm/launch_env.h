// Where a process sits in a job, from the launcher's environment, the way cluster users
// expect: Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK), Slurm's srun
// (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID: a job step's, not an sbatch
// script's, which has SLURM_PROCID and SLURM_NTASKS too) or torchrun-style variables (RANK,
// WORLD_SIZE, LOCAL_RANK), checked in that order. The NCCL backend picks its GPU by the
// local rank; the CLI uses it to catch `mpirun -np 4 dtlab ... --backend threads`.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace dtl {

struct LaunchEnv {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string launcher;  // "open-mpi", "slurm", "torchrun"
};

// nullopt when no launcher variables are set (a plain process). UsageError when they are
// set but not numbers, or inconsistent (rank outside 0..size-1).
std::optional<LaunchEnv> detect_launch_env();
// The same from any lookup (the tests pass a map instead of the process environment).
std::optional<LaunchEnv> detect_launch_env(const std::function<const char*(const char*)>& getenv_fn);

}  // namespace dtl
