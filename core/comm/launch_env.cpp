#include "core/comm/launch_env.h"

#include <cstdlib>

#include "core/error.h"

namespace dtl {

namespace {

struct Convention {
  const char* launcher;
  const char *rank, *size, *local_rank;
};

// In order of precedence: inside an srun job step started by mpirun, mpirun's own
// numbering is the one the processes were started with.
//
// Slurm's size is the step's, SLURM_STEP_NUM_TASKS, which only srun sets: an sbatch
// script also has SLURM_PROCID=0 and SLURM_NTASKS (the job's task count), and dtlab run
// from the script itself is one process, not rank 0 of SLURM_NTASKS.
constexpr Convention kConventions[] = {
    {"open-mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

int parse_count(const char* name, const char* value) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || v < 0 || v > 1 << 24)
    throw UsageError(std::string("environment variable ") + name + "='" + value +
                     "' is not a whole number; unset it or fix the launcher's settings");
  return int(v);
}

}  // namespace

std::optional<LaunchEnv> detect_launch_env(const std::function<const char*(const char*)>& getenv_fn) {
  for (const Convention& c : kConventions) {
    const char* rank = getenv_fn(c.rank);
    const char* size = getenv_fn(c.size);
    if (!rank || !size) continue;
    LaunchEnv env;
    env.launcher = c.launcher;
    env.rank = parse_count(c.rank, rank);
    env.world_size = parse_count(c.size, size);
    const char* local = getenv_fn(c.local_rank);
    env.local_rank = local ? parse_count(c.local_rank, local) : 0;
    if (env.world_size < 1 || env.rank >= env.world_size)
      throw UsageError(std::string(c.rank) + "=" + rank + " is outside 0.." + std::to_string(env.world_size - 1) +
                       " (" + c.size + "=" + size + ")");
    return env;
  }
  return std::nullopt;
}

std::optional<LaunchEnv> detect_launch_env() {
  return detect_launch_env([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace dtl
