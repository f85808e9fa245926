// No silent options in `dtlab plan` and `dtlab simulate` (issue 30): every option each
// command's --help lists, changed from a small base configuration to another valid value,
// either changes the report's figures (its rows and notes in --json, the setup lines left
// out: a header that names an option proves nothing) or is refused with exit 2 naming the
// option. An option --help lists that this table lacks fails the test: add it here.
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "tests/cli/cli_util.h"

using dtl::test::run_dtlab;

namespace {

using Options = std::map<std::string, std::string>;
const std::map<std::string, Options> kBase = {
    {"plan", {{"--model", "7b"}, {"--gpus", "16"}, {"--dp", "2"}, {"--tp", "4"}, {"--pp", "2"}}},
    {"simulate", {{"--model", "7b"}, {"--dp", "2"}, {"--tp", "4"}, {"--pp", "2"}}},
};

std::string command_line(const std::string& command, const Options& options) {
  std::string out = command;
  for (const auto& [option, value] : options) out += " " + option + (value.empty() ? "" : " " + value);
  return out + " --json";
}

// Another valid value of each option (flags: ""). What it does in each command is the test's.
const std::map<std::string, std::string> kValue = {
    {"--model", "13b"},
    {"--params", "7e9"},
    {"--layers", "40"},
    {"--hidden", "5120"},
    {"--heads", "40"},
    {"--seq", "1024"},
    {"--vocab", "64000"},
    {"--cluster", "h100-80gb"},
    {"--gpus", "32"},
    {"--gpus-per-node", "4"},
    {"--gpu-memory", "40G"},
    {"--intra-bw", "100"},
    {"--inter-bw", "5"},
    {"--intra-latency", "500"},
    {"--inter-latency", "500"},
    {"--peak-tflops", "100"},
    {"--dp", "4"},
    {"--tp", "2"},
    {"--pp", "4"},
    {"--zero", "1"},
    {"--micro-batch-size", "4"},
    {"--micro-batches", "64"},
    {"--recompute", "full"},
    {"--convention", "12"},
    {"--efficiency", "0.25"},
    {"--search", "16"},
    {"--global-batch", "64"},
    {"--steps", "3"},
    {"--ranks-in-trace", "all"},
    {"--schedule", "gpipe"},
    {"--algo", "ring"},
    {"--calibrate-link", "nvlink4"},
    {"--calibrate-compute-us", "100"},
    {"--calibrate-compute-from", "same-run"},
    {"--calibrate-repeat", "2"},
    {"--compute", "flat"},
    {"--chunks", "2"},
    {"--first-stage-layers", "10"},  // 7b's 32 layers on pp 2: 10 and 22, not 16 and 16
    {"--last-stage-layers", "10"},
    {"--dp-bucket-mb", "2000"},
    {"--experts", "8"},
    {"--top-k", "1"},
    {"--ep", "2"},
    {"--cp", "2"},
    {"--cp-algo", "all-gather"},
    // what real runs do (core/theory/practice.h) and the model families (issue 45)
    {"--framework", "megatron-2021"},
    {"--sequence-parallel", "off"},
    {"--attention", "unfused"},
    {"--dropout", "on"},
    {"--kernels", "unfused"},
    {"--tp-comm", "overlapped"},
    {"--dp-comm", "exposed"},
    {"--grads", "bf16"},
    {"--zero3-prefetch", "2"},
    {"--family", "llama"},
    {"--kv-heads", "8"},
    {"--ffn", "11008"},
    {"--explain", ""},
    {"--versus", "tp=2,pp=4"},
    // goodput (core/theory/goodput.h): the interval and write options act only with --mtbf-hours
    {"--mtbf-hours", "50000"},
    {"--checkpoint-write-gbps", "50"},
    {"--restart-minutes", "5"},
    // simulate's synchronous checkpoints between steps (labs/cli/simulate_checkpoint.h)
    {"--checkpoint-every", "2"},
};
// Options whose effect is not a figure, with what it is instead (checked by other tests).
const std::map<std::string, std::string> kNotAFigure = {
    {"--json", "the report as JSON (every other case here reads it)"},
    {"--trace", "a trace file (simulate_cli_test reads it)"},
    {"--calibrate", "runs the grid lab here (simulate_calibrate tests)"},
    {"--help-all", "help"},
};

std::set<std::string> options_of(const std::string& command) {
  const auto help = run_dtlab(command + " --help");
  std::set<std::string> out;
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find_first_not_of(' ');
    if (at == std::string::npos || line.compare(at, 2, "--") != 0) continue;
    out.insert(line.substr(at, line.find_first_of(" ,", at) - at));
  }
  return out;
}

using Figures = std::map<std::string, std::string>;

// The figures of a report: its rows (id → measured) and its notes, by position.
Figures figures(const std::string& json_text) {
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded()) return {{"(not JSON)", json_text}};
  Figures out;
  for (const auto& row : j.value("rows", nlohmann::json::array())) out[row.value("id", "")] = row["measured"].dump();
  int n = 0;
  for (const auto& note : j.value("notes", nlohmann::json::array())) out["note " + std::to_string(n++)] = note.dump();
  return out;
}

// `a` without what differs between two runs of the same command (a note's own timing).
Figures steady(Figures a, const Figures& again) {
  for (auto it = a.begin(); it != a.end();) {
    const auto other = again.find(it->first);
    it = other == again.end() || other->second != it->second ? a.erase(it) : std::next(it);
  }
  return a;
}

// Whether `b` differs from the steady figures `a` (a figure gone or new, or changed).
bool differs(const Figures& a, const Figures& b) {
  for (const auto& [id, value] : a) {
    const auto it = b.find(id);
    if (it == b.end() || it->second != value) return true;
  }
  for (const auto& [id, value] : b)
    if (!a.count(id) && id.rfind("note ", 0) != 0) return true;
  return false;
}

}  // namespace

TEST(PlanOptionEffect, EveryOptionOfPlanAndSimulateChangesTheFiguresOrIsRefused) {
  int changed = 0, refused = 0;
  for (const auto& [command, base] : kBase) {
    const auto a = run_dtlab(command_line(command, base));
    ASSERT_EQ(a.code, 0) << command_line(command, base) << "\n" << a.err;
    const Figures before = steady(figures(a.out), figures(run_dtlab(command_line(command, base)).out));
    for (const std::string& option : options_of(command)) {
      if (kNotAFigure.count(option)) continue;
      const auto value = kValue.find(option);
      ASSERT_NE(value, kValue.end()) << command << " " << option << ": an option this test does not know; add a value";
      Options options = base;
      options[option] = value->second;  // (replaces the base's value of an option it gives)
      const std::string args = command_line(command, options);
      const auto b = run_dtlab(args);
      if (b.code == 2) {
        EXPECT_NE(b.err.find(option), std::string::npos)
            << "dtlab " << args << ": refused without naming " << option << "\n"
            << b.err;
        std::printf("%-80s refused: %s", args.c_str(), b.err.c_str());
        ++refused;
        continue;
      }
      ASSERT_EQ(b.code, 0) << "dtlab " << args << "\n" << b.err;
      EXPECT_TRUE(differs(before, figures(b.out)))
          << "dtlab " << args << ": accepted, yet no figure of the report changed";
      std::printf("%-80s changes the figures\n", args.c_str());
      ++changed;
    }
  }
  std::printf("%d options changed the figures, %d were refused\n", changed, refused);
  EXPECT_GE(changed + refused, 60);
}
