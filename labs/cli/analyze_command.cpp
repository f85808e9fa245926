// `dtlab analyze TRACES... [--json]`: the ranks of one PyTorch run, from their
// torch.profiler traces (core/trace/run_breakdown.h says what each figure is).
//
//   dtlab analyze /tmp/ddp_traces            (a folder: its rank<r>.json files)
//   dtlab analyze rank0.json rank1.json --json
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/trace/run_breakdown.h"
#include "core/trace/torch_profile.h"
#include "labs/cli/commands.h"

namespace dtl::cli {

Command add_analyze_command(CLI::App& app) {
  CLI::App* analyze = app.add_subcommand(
      "analyze",
      "Per rank compute, exposed communication and idle time, and the rank the others waited on, from a "
      "PyTorch run's torch.profiler traces (one per rank)");
  auto traces = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  analyze->add_option("traces", *traces, "Each rank's torch.profiler trace (export_chrome_trace), or their folder")
      ->required();
  analyze->add_flag("--json", *json, "Print the figures as JSON (for scripts)");
  return [traces, json] {
    std::vector<TorchProfile> profiles = load_torch_run(*traces);
    const RunBreakdown run = analyze_run(profiles);
    std::cout << (*json ? run_json(run) : describe_run(run));
    return 0;
  };
}

}  // namespace dtl::cli
