// `dtlab learn`: the learner's path, docs/path.md, built into the binary.
//
//   dtlab learn                 # the whole path: every lab and exercise in order
//   dtlab learn collectives     # one lab's part of it
//
// For each exercise the path names the curriculum's formula it reproduces, the commands to
// run and what to look at in the visualizer. A lab of the registry without a part in the
// path is an error here and in tests/cli/learn_test.cpp: the path grows with the labs.
#include <iostream>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "labs/cli/commands.h"
#include "labs/cli/learner_path.h"  // generated from docs/path.md
#include "labs/lab.h"

namespace dtl::cli {

namespace {

// A lab's part of the path: from its "## ... Lab `NAME`" heading to the next "## " heading.
std::string lab_part(const std::string& path, const std::string& lab) {
  const std::string marker = "Lab `" + lab + "`";
  std::istringstream in(path);
  std::string part;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    const bool heading = line.rfind("## ", 0) == 0;
    if (heading) inside = line.find(marker) != std::string::npos;
    if (inside) part += line + "\n";
  }
  return part;
}

int print_path(const std::string& lab) {
  const std::string path = kLearnerPath;
  if (lab.empty()) {
    std::cout << path;
    return 0;
  }
  std::string names;
  for (const LabInfo& l : lab_registry()) names += (names.empty() ? "" : ", ") + l.name;
  if (!find_lab(lab)) throw UsageError("'" + lab + "' is not a lab; the labs are " + names);
  const std::string part = lab_part(path, lab);
  if (part.empty()) throw Error("the learner's path (docs/path.md) has no part for lab '" + lab + "' yet");
  std::cout << part;
  return 0;
}

}  // namespace

Command add_learn_command(CLI::App& app) {
  CLI::App* l = app.add_subcommand("learn",
                                   "Print the learner's path: the labs and exercises in order, each with "
                                   "its formula, the commands to run and what to watch in the visualizer");
  auto lab = std::make_shared<std::string>();
  l->add_option("lab", *lab, "Print only this lab's part (e.g. collectives)");
  return [lab] { return print_path(*lab); };
}

}  // namespace dtl::cli
