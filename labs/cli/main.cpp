// dtlab — run, step through, measure and grade distributed-training labs.
//
//   dtlab list
//   dtlab run collectives --algo ring --ranks 4 --bytes 64M --trace ring.json
//   dtlab run collectives --algo ring --ranks 4 --bytes 256 --step
//   dtlab bench all_reduce --impl library --ranks 4 -b 8 -e 256M -f 2 --json out.json
//   dtlab bench-kernels --batch 256 --width 1024
//   dtlab bench-step --device cuda --width 4096 --depth 8 --batch 4096
//   dtlab grade --exercise ring_all_reduce
//
// Exit codes: 0 success, 1 the run failed (a rank failed, a check failed), 2 bad usage.
#include <iostream>

#include "core/error.h"
#include "labs/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"dtlab: an interactive lab for distributed deep-learning training", "dtlab"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  const std::vector<std::pair<std::string, dtl::cli::Command>> commands = {
      {"list", dtl::cli::add_list_command(app)},
      {"run", dtl::cli::add_run_command(app)},
      {"bench", dtl::cli::add_bench_command(app)},
      {"bench-kernels", dtl::cli::add_kernels_bench_command(app)},
      {"bench-step", dtl::cli::add_step_bench_command(app)},
      {"grade", dtl::cli::add_grade_command(app)},
  };
  try {
    // A first word that is no command (a typo, a lab name without `run`) is named, with the commands.
    if (argc > 1 && argv[1][0] != '-') {
      std::string names;
      bool known = false;
      for (const auto& [name, cmd] : commands) {
        names += (names.empty() ? "" : ", ") + name;
        known = known || name == argv[1];
      }
      if (!known) throw dtl::UsageError("unknown command '" + std::string(argv[1]) + "'; the commands are " + names);
    }
    app.parse(argc, argv);
    for (const auto& [name, cmd] : commands)
      if (app.get_subcommand(name)->parsed()) return cmd();
    return 0;
  } catch (const CLI::CallForHelp&) {
    return app.exit(CLI::CallForHelp());
  } catch (const CLI::CallForAllHelp&) {
    return app.exit(CLI::CallForAllHelp());
  } catch (const CLI::ParseError& e) {
    // CLI11 has printed nothing yet: say what is wrong in one line, with where to look.
    std::cerr << "dtlab: error: " << e.what() << "\n       (see 'dtlab --help' or 'dtlab <command> --help')\n";
    return 2;
  } catch (const dtl::UsageError& e) {
    std::cerr << "dtlab: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dtlab: " << e.what() << "\n";
    return 1;
  }
}
