// The visualizer's loader against hostile traces (issue 14): hundreds of variants of real
// traces this test writes itself (trace_mutations.h), each loaded the way the app loads a
// trace (load_trace + index_trace + a frame's model queries) in a child process limited to
// 2 GiB of address space and 10 s. Every case must either load or fail with a one-line
// dtl::Error: no signal, no hang, no std::bad_alloc. The libFuzzer target
// (trace_parser_fuzz.cpp, tests/viz/fuzz.sh) explores further; this runs in every ctest.
#include <gtest/gtest.h>

#include <cctype>
#include <map>

#include "tests/viz/child_process.h"
#include "tests/viz/trace_fixtures.h"
#include "tests/viz/trace_mutations.h"

using namespace dtl;
using namespace dtl::test;

namespace {

// Real traces, written once per test process: the collectives lab on thread ranks.
struct BaseTraces {
  TempFolder dir{"viz_fuzz_base"};
  std::string json, dtlt;
  BaseTraces() {
    const std::string path = dir.file("base.json");
    write_lab_trace(path, 4, "all", 256);
    json = read_file(path);
    dtlt = read_file(path + ".dtlt");
  }
};
const BaseTraces& base() {
  static const BaseTraces b;
  return b;
}

struct Outcomes {
  int loaded = 0, rejected = 0;
  std::vector<std::string> failures;
  std::map<std::string, int> messages;  // distinct error texts (without their numbers), for the log
};

// A clean rejection: exit 1 and a message of one non-empty line.
bool clean_error(const ChildResult& r) {
  return r.exit_code == 1 && !r.message.empty() && r.message.find('\n') == std::string::npos && r.message.size() < 600;
}

// The first clause of an error message with its numbers blanked, so the log groups alike errors.
std::string shape_of(const std::string& message) {
  std::string out;
  for (char c : message.substr(0, message.find("; "))) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      out += c;
    else if (out.empty() || out.back() != '#')
      out += '#';
  }
  return out;
}

void run_cases(const std::vector<HostileCase>& cases, Outcomes& out) {
  TempFolder dir("viz_fuzz_cases");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const HostileCase& c = cases[i];
    const std::string path = dir.file("case" + std::to_string(i) + (c.binary ? ".dtlt" : ".json"));
    write_file(path, c.bytes);
    const ChildResult r = run_in_child([&] { return load_like_the_app(path); });
    if (r.exit_code == 0) {
      ++out.loaded;
    } else if (clean_error(r)) {
      ++out.rejected;
      ++out.messages[shape_of(r.message)];
    } else {  // keep the input: the base trace is a real run, so the case is only reproduced from it
      const std::string kept = testing::TempDir() + "viz_fuzz_failure_" + std::to_string(out.failures.size()) +
                               (c.binary ? ".dtlt" : ".json");
      write_file(kept, c.bytes);
      out.failures.push_back(c.name + ": " + (r.hung() ? "hung (over 10 s)" : r.describe()) + " (input kept in " +
                             kept + ")");
    }
    std::remove(path.c_str());
  }
}

void expect_all_clean(const std::vector<HostileCase>& cases, std::size_t at_least) {
  ASSERT_GE(cases.size(), at_least);
  Outcomes out;
  run_cases(cases, out);
  std::printf("%zu hostile cases: %d loaded, %d rejected with a one-line error, %zu failed\n", cases.size(), out.loaded,
              out.rejected, out.failures.size());
  for (const auto& [text, n] : out.messages) std::printf("  %4d x %s\n", n, text.c_str());
  std::string shown;
  for (std::size_t i = 0; i < out.failures.size() && i < 20; ++i) shown += "\n  " + out.failures[i];
  EXPECT_TRUE(out.failures.empty()) << out.failures.size()
                                    << " cases crashed, hung or failed without a clean error:" << shown;
}

}  // namespace

TEST(TraceFuzz, MutatedJsonLoadsOrFailsCleanly) { expect_all_clean(json_cases(base().json), 500); }

TEST(TraceFuzz, HostileShapesLoadOrFailCleanly) { expect_all_clean(structural_cases(base().json), 25); }

TEST(TraceFuzz, DamagedBinaryTracesLoadOrFailCleanly) { expect_all_clean(binary_cases(base().dtlt), 150); }

// A damaged or foreign companion never stops the JSON from opening: it is ignored (and
// rewritten), whatever is wrong with it.
TEST(TraceFuzz, DamagedCompanionFallsBackToTheJson) {
  TempFolder dir("viz_fuzz_companion");
  const std::string path = dir.file("t.json");
  std::vector<std::string> companions;
  for (const HostileCase& c : binary_cases(base().dtlt)) companions.push_back(c.bytes);
  companions.push_back(std::string("DTLTRACE\x01\0\0\0\x04\0\0\0", 16));  // a version-1 header
  int checked = 0;
  for (std::size_t i = 0; i < companions.size(); i += 7, ++checked) {
    write_file(path, base().json);
    write_file(path + ".dtlt", companions[i]);
    const ChildResult r = run_in_child([&] { return load_like_the_app(path); });
    ASSERT_EQ(r.exit_code, 0) << "companion variant " << i << ": " << r.describe();
  }
  EXPECT_GE(checked, 20);
}
