// The `dtlab` subcommands. Each add_* registers its options; the returned callback runs
// it and gives the exit code (0 ok, 1 the run failed, 2 bad usage via UsageError).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace dtl::cli {

using Command = std::function<int()>;

Command add_list_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_grade_command(CLI::App& app);
Command add_learn_command(CLI::App& app);
Command add_kernels_bench_command(CLI::App& app);
Command add_step_bench_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
Command add_simulate_command(CLI::App& app);
Command add_analyze_command(CLI::App& app);

// "RANK[:STEP]" for --inject-fault / --inject-hang; throws UsageError.
void parse_rank_step(const std::string& text, const char* flag, int ranks, int& rank, int& step);
// "RANK:FACTOR" for --slow-rank (FACTOR >= 1); throws UsageError.
void parse_slow_rank(const std::string& text, int ranks, int& rank, double& factor);

}  // namespace dtl::cli
