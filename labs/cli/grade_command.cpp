// `dtlab grade`: run the graded tests against this build and print a score table.
//
//   dtlab grade                         # every exercise
//   dtlab grade --exercise ring_all_reduce --json score.json
//
// The graded tests (CTest label `grade`) are GoogleTest suites named after the
// exercises (RingAllReduce grades ring_all_reduce). The grader runs that binary with
// --gtest_output=json, so it reports exactly what ctest would, and adds the points.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/util/files.h"
#include "labs/cli/commands.h"

namespace dtl::cli {

namespace {

struct Exercise {
  const char* id;     // as in exercises/*.h
  const char* suite;  // GoogleTest suite that grades it
  int points;
};

// The curriculum's order: the ring first, then trees, halving-doubling, the cost model,
// then data parallelism (buckets, overlap, averaging, no_sync).
constexpr Exercise kExercises[] = {
    {"naive_all_reduce", "NaiveAllReduce", 5},
    {"ring_reduce_scatter", "RingReduceScatter", 15},
    {"ring_all_gather", "RingAllGather", 10},
    {"ring_all_reduce", "RingAllReduce", 15},
    {"all_reduce_by_reduce_scatter_all_gather", "AllReduceByReduceScatterAllGather", 10},
    {"tree", "TreeBroadcast", 10},
    {"tree", "TreeAllReduce", 10},
    {"rhd_all_reduce", "RhdAllReduce", 20},
    {"all_reduce_cost", "AllReduceCost", 5},
    {"assign_buckets", "AssignBuckets", 10},
    {"launch_ready_buckets", "LaunchReadyBuckets", 10},
    {"wait_for_buckets", "WaitForBuckets", 5},
    {"average_gradients", "AverageGradients", 5},
    {"sync_this_micro_batch", "SyncThisMicroBatch", 5},
};

struct Score {
  std::string id;
  int passed = 0, total = 0, points = 0, max_points = 0;
  std::vector<std::string> messages;
};

// The most useful line of a GoogleTest failure: a stub's hint, else the first lines.
std::string summarize_failure(const std::string& text) {
  const auto pos = text.find("exercise '");
  std::string s = pos != std::string::npos ? text.substr(pos) : text;
  const auto nl = s.find('\n');
  if (pos == std::string::npos && nl != std::string::npos) {  // skip the "file:line" first line
    s = s.substr(nl + 1);
  }
  for (auto& c : s)
    if (c == '\n') c = ' ';
  return s.size() > 700 ? s.substr(0, 700) + "..." : s;
}

int run_grade(const std::string& only, const std::string& json_path) {
#ifndef DTL_GRADE_TEST_EXE
  throw Error("this build has no graded tests (configure with -DDTL_BUILD_TESTS=ON)");
#else
  bool known = only.empty();
  std::string filter;
  for (const Exercise& e : kExercises) {
    if (!only.empty() && only != e.id) continue;
    known = true;
    filter += (filter.empty() ? "" : ":") + std::string(e.suite) + ".*";
  }
  if (!known) {
    std::string ids;
    for (const Exercise& e : kExercises) ids += (ids.empty() ? "" : " ") + std::string(e.id);
    throw UsageError("unknown exercise '" + only + "'; use one of: " + ids);
  }
  char tmpl[] = "/tmp/dtlab-grade-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) throw Error("cannot create a temporary file for the test results");
  close(fd);
  const std::string results = tmpl;
  const std::string cmd = std::string("'") + DTL_GRADE_TEST_EXE + "' --gtest_filter='" + filter + "' --gtest_output=json:" +
                          results + " > /dev/null 2>&1";
  std::cerr << "grading " << (only.empty() ? "every exercise" : only) << " (track " << DTL_TRACK_NAME << ")...\n";
  const int status = std::system(cmd.c_str());
  std::ifstream in(results);
  if (!in || (WIFEXITED(status) && WEXITSTATUS(status) > 1)) {
    std::remove(results.c_str());
    throw Error("the graded tests did not run (" + std::string(DTL_GRADE_TEST_EXE) + "); rebuild and try again");
  }
  const nlohmann::json j = nlohmann::json::parse(in);
  std::remove(results.c_str());

  std::vector<Score> scores;
  for (const Exercise& e : kExercises) {
    if (!only.empty() && only != e.id) continue;
    if (scores.empty() || scores.back().id != e.id) scores.push_back(Score{e.id, 0, 0, 0, 0, {}});
    Score& s = scores.back();
    s.max_points += e.points;
    int passed = 0, total = 0;
    for (const auto& suite : j["testsuites"]) {
      if (suite["name"] != e.suite) continue;
      for (const auto& t : suite["testsuite"]) {
        ++total;
        if (!t.contains("failures")) ++passed;
        else if (s.messages.empty()) s.messages.push_back(summarize_failure(t["failures"][0]["failure"].get<std::string>()));
      }
    }
    s.passed += passed;
    s.total += total;
    if (total > 0 && passed == total) s.points += e.points;
  }

  int points = 0, max_points = 0;
  bool all = true;
  std::printf("%-42s %8s %7s  %s\n", "exercise", "tests", "points", "first failure");
  for (const Score& s : scores) {
    std::printf("%-42s %4d/%-3d %3d/%-3d  %s\n", s.id.c_str(), s.passed, s.total, s.points, s.max_points,
                s.messages.empty() ? "" : s.messages.front().c_str());
    points += s.points;
    max_points += s.max_points;
    all = all && s.total > 0 && s.passed == s.total;
  }
  std::printf("%-42s %8s %3d/%-3d  %s\n", "total", "", points, max_points, all ? "all passed" : "");
  if (!json_path.empty()) {
    nlohmann::json out = {{"track", DTL_TRACK_NAME}, {"total_points", points}, {"max_points", max_points}, {"passed", all}};
    out["exercises"] = nlohmann::json::array();
    for (const Score& s : scores)
      out["exercises"].push_back({{"id", s.id}, {"passed", s.passed}, {"total", s.total}, {"points", s.points},
                                  {"max_points", s.max_points}, {"messages", s.messages}});
    write_text_file(json_path, out.dump(2) + "\n", "--json");
  }
  return all ? 0 : 1;
#endif
}

}  // namespace

Command add_grade_command(CLI::App& app) {
  CLI::App* g = app.add_subcommand("grade", "Grade the exercises of this build and print a score table");
  auto only = std::make_shared<std::string>();
  auto json_path = std::make_shared<std::string>();
  g->add_option("--exercise,-x", *only, "Grade only this exercise (e.g. ring_all_reduce)");
  g->add_option("--json", *json_path, "Also write the scores as JSON to this file");
  return [only, json_path] { return run_grade(*only, *json_path); };
}

}  // namespace dtl::cli
