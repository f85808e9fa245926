#include <iostream>

#include "labs/cli/commands.h"
#include "labs/lab.h"

namespace dtl::cli {

Command add_list_command(CLI::App& app) {
  app.add_subcommand("list", "List the labs with a one-line description");
  return [] {
    for (const auto& lab : lab_registry()) {
      std::cout << lab.name << "  " << lab.description << "\n";
      for (const auto& opt : lab.options)
        std::cout << "    --" << opt.name << "  " << opt.help << ": " << opt.describe_valid() << " (default "
                  << opt.default_value << ")\n";
    }
    return 0;
  };
}

}  // namespace dtl::cli
