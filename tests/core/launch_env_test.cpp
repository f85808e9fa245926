// Rank, size and local rank from the launcher's environment: each convention, their
// precedence, and bad values as usage errors.
#include "core/comm/launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"

using namespace dtl;

namespace {
std::optional<LaunchEnv> detect(const std::map<std::string, std::string>& vars) {
  return detect_launch_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST(LaunchEnv, EachLauncherConvention) {
  EXPECT_FALSE(detect({}).has_value());
  auto ompi =
      detect({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  ASSERT_TRUE(ompi);
  EXPECT_EQ(ompi->launcher, "open-mpi");
  EXPECT_EQ(ompi->rank, 3);
  EXPECT_EQ(ompi->world_size, 8);
  EXPECT_EQ(ompi->local_rank, 1);
  // What srun gives each task of `srun -n 16` (seen on a real slurmd, 22.05).
  auto slurm =
      detect({{"SLURM_PROCID", "5"}, {"SLURM_STEP_NUM_TASKS", "16"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "5"}});
  ASSERT_TRUE(slurm);
  EXPECT_EQ(slurm->launcher, "slurm");
  EXPECT_EQ(slurm->rank, 5);
  EXPECT_EQ(slurm->world_size, 16);
  auto torch = detect({{"RANK", "0"}, {"WORLD_SIZE", "2"}});  // LOCAL_RANK missing: 0
  ASSERT_TRUE(torch);
  EXPECT_EQ(torch->launcher, "torchrun");
  EXPECT_EQ(torch->local_rank, 0);
}

TEST(LaunchEnv, OpenMpiWinsInsideASlurmJob) {
  auto env = detect({{"SLURM_PROCID", "0"},
                     {"SLURM_STEP_NUM_TASKS", "1"},
                     {"OMPI_COMM_WORLD_RANK", "2"},
                     {"OMPI_COMM_WORLD_SIZE", "4"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->launcher, "open-mpi");
  EXPECT_EQ(env->rank, 2);
}

// `sbatch -n 4 job.sh`: the script itself runs with SLURM_PROCID=0, SLURM_NTASKS=4 and
// SLURM_LOCALID=0 but no job step (seen on a real slurmd, 22.05). A dtlab it starts
// directly is one process (threads backend, or one process per GPU), not rank 0 of 4.
TEST(LaunchEnv, AnSbatchScriptIsNotAJobStep) {
  EXPECT_FALSE(detect({{"SLURM_PROCID", "0"},
                       {"SLURM_NTASKS", "4"},
                       {"SLURM_NPROCS", "4"},
                       {"SLURM_LOCALID", "0"},
                       {"SLURM_JOB_ID", "1"}})
                   .has_value());
  // srun inside that script: the step's size, not the job's.
  auto step = detect({{"SLURM_PROCID", "1"},
                      {"SLURM_STEP_NUM_TASKS", "2"},
                      {"SLURM_NTASKS", "2"},
                      {"SLURM_LOCALID", "1"},
                      {"SLURM_STEP_ID", "0"},
                      {"SLURM_JOB_ID", "1"}});
  ASSERT_TRUE(step);
  EXPECT_EQ(step->launcher, "slurm");
  EXPECT_EQ(step->rank, 1);
  EXPECT_EQ(step->world_size, 2);
  EXPECT_EQ(step->local_rank, 1);
}

TEST(LaunchEnv, BadValuesAreUsageErrors) {
  EXPECT_THROW(detect({{"RANK", "one"}, {"WORLD_SIZE", "2"}}), UsageError);
  EXPECT_THROW(detect({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), UsageError);  // rank outside 0..1
  EXPECT_THROW(detect({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), UsageError);
  EXPECT_THROW(detect({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}), UsageError);
  EXPECT_FALSE(detect({{"RANK", "1"}}).has_value());  // half a convention is none
}
