#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "labs/cli/commands.h"
#include "labs/lab.h"

namespace dtl::cli {

namespace {

void print_text() {
  for (const auto& lab : lab_registry()) {
    std::cout << lab.name << "  " << lab.description << "\n";
    for (const auto& opt : lab.options)
      std::cout << "    --" << opt.name << "  " << opt.help << ": " << opt.describe_valid() << " (default "
                << opt.default_value << ")\n";
  }
}

// What scripts need of every lab (tests/grade/check_student_grader.sh): its options with
// their choices, its exercises, its small run and its extra runs as `dtlab run` arguments.
nlohmann::json registry_json() {
  nlohmann::json labs = nlohmann::json::array();
  for (const auto& lab : lab_registry()) {
    nlohmann::json options = nlohmann::json::array(), exercises = nlohmann::json::array();
    for (const auto& opt : lab.options)
      options.push_back({{"name", opt.name}, {"default", opt.default_value}, {"choices", opt.choices}});
    for (const auto& e : lab.exercises) exercises.push_back({{"id", e.id}, {"suite", e.suite}, {"points", e.points}});
    auto as_args = [](const std::map<std::string, std::string>& run) {
      std::vector<std::string> args;
      for (const auto& [flag, value] : run) args.insert(args.end(), {"--" + flag, value});
      return args;
    };
    nlohmann::json extra_runs = nlohmann::json::array();
    for (const auto& run : lab.extra_runs) extra_runs.push_back(as_args(run));
    labs.push_back({{"name", lab.name},
                    {"description", lab.description},
                    {"options", options},
                    {"exercises", exercises},
                    {"small_run", as_args(lab.small_run)},
                    {"extra_runs", extra_runs}});
  }
  return labs;
}

}  // namespace

Command add_list_command(CLI::App& app) {
  CLI::App* list = app.add_subcommand("list", "List the labs with a one-line description");
  auto json = std::make_shared<bool>(false);
  list->add_flag("--json", *json, "Print every lab's options, exercises and small run as JSON (for scripts)");
  return [json] {
    if (*json)
      std::cout << registry_json().dump(1) << "\n";
    else
      print_text();
    return 0;
  };
}

}  // namespace dtl::cli
