// `dtlab grade`: run the graded tests against this build and print a score table.
//
//   dtlab grade                         # every exercise, hint 1 under each failing one
//   dtlab grade --exercise ring_all_reduce --hint 2 --json score.json
//
// The graded tests (CTest label `grade`) are GoogleTest suites named after the
// exercises (RingAllReduce grades ring_all_reduce). The grader runs that binary with
// --gtest_output=json, so it reports exactly what ctest would, and adds the points.
// Under each failing exercise it prints the first failure as the test words it (the
// function, the case, what differs: grade_messages.h drops GoogleTest's framing) and the
// exercise's hint at the level asked (exercises/<lab>_hints.cpp: 1 the idea, 2 the formula or
// the indices, 3 an outline in words).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/util/files.h"
#include "exercises/track/hints.h"
#include "exercises/track/track.h"
#include "labs/cli/commands.h"
#include "labs/cli/grade_messages.h"
#include "labs/cli/grade_program.h"
#include "labs/cli/validators.h"
#include "labs/lab.h"

namespace dtl::cli {

namespace {

// Every lab's exercises, in the registry's order (each lab lists its own in LabInfo).
std::vector<ExerciseInfo> all_exercises() {
  std::vector<ExerciseInfo> all;
  for (const LabInfo& lab : lab_registry()) all.insert(all.end(), lab.exercises.begin(), lab.exercises.end());
  return all;
}

struct Score {
  std::string id;
  int passed = 0, total = 0, points = 0, max_points = 0;
  std::vector<std::string> messages;  // the first failure, as a learner reads it
  bool failed() const { return total == 0 || passed < total; }
};

// One run of the grade program on `filter`: GoogleTest's JSON results, or (it died) what
// it printed and how it died.
struct GradeProgramRun {
  std::optional<nlohmann::json> results;
  std::string output, crash;
};

GradeProgramRun run_grade_program(const std::string& filter) {
  char results_tmpl[] = "/tmp/dtlab-grade-XXXXXX", log_tmpl[] = "/tmp/dtlab-grade-log-XXXXXX";
  const int fd = mkstemp(results_tmpl), log_fd = mkstemp(log_tmpl);
  if (fd < 0 || log_fd < 0) throw Error("cannot create a temporary file for the test results");
  close(fd), close(log_fd);
  const std::string results = results_tmpl, log = log_tmpl;
  const std::string cmd = std::string("'") + graded_tests_program() + "' --gtest_filter='" + filter +
                          "' --gtest_output=json:" + results + " > " + log + " 2>&1";
  const int status = std::system(cmd.c_str());
  GradeProgramRun run;
  std::ifstream log_in(log);
  run.output.assign(std::istreambuf_iterator<char>(log_in), std::istreambuf_iterator<char>());
  run.crash = crash_words(status);
  std::ifstream in(results);
  if (in && in.peek() != std::ifstream::traits_type::eof() && run.crash.empty() && WIFEXITED(status) &&
      WEXITSTATUS(status) <= 1)
    run.results = nlohmann::json::parse(in);
  std::remove(results.c_str());
  std::remove(log.c_str());
  return run;
}

// Runs the graded tests of `filter` and returns GoogleTest's JSON results. A test the
// learner's code crashes (SIGSEGV, SIGABRT) is recorded as that test's failure, naming the
// signal and the program's last words, and the others run again without it, so one crash
// costs its own exercise only.
nlohmann::json run_graded_tests(const std::string& filter, const std::string& what) {
  std::cerr << "grading " << what << " (track " << ex::track_name() << ")...\n";
  nlohmann::json crashed = nlohmann::json::array();
  std::string excluded;
  for (int attempt = 0; attempt < 64; ++attempt) {
    GradeProgramRun run = run_grade_program(filter + (excluded.empty() ? "" : "-" + excluded));
    if (run.results) {
      for (nlohmann::json& suite : crashed) (*run.results)["testsuites"].push_back(std::move(suite));
      return *run.results;
    }
    const std::string test = test_running_at_crash(run.output);
    if (run.crash.empty() || test.empty())
      throw Error("the graded tests did not run (" + std::string(graded_tests_program()) + "; " +
                  (run.crash.empty() ? "its output: " + last_words(run.output) : run.crash) +
                  "); rebuild and try again");
    const std::string words = last_words(run.output);
    const std::string failure =
        "the grade program crashed (" + run.crash + ") in the test " + test +
        (words.empty() ? "" : "; its last words: " + words) +
        "; to have the overrun named, configure the student build with -DCMAKE_CXX_FLAGS=-fsanitize=address "
        "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address";
    const std::size_t dot = test.find('.');
    crashed.push_back({{"name", test.substr(0, dot)},
                       {"testsuite", {{{"name", test.substr(dot + 1)}, {"failures", {{{"failure", failure}}}}}}}});
    excluded += (excluded.empty() ? "" : ":") + test;
  }
  throw Error("the graded tests crashed 64 times; fix the first crash and grade again");
}

// Points per exercise: an exercise's points for each of its suites whose tests all pass.
std::vector<Score> score(const nlohmann::json& results, const std::vector<ExerciseInfo>& exercises) {
  std::vector<Score> scores;
  for (const ExerciseInfo& e : exercises) {
    if (scores.empty() || scores.back().id != e.id) scores.push_back(Score{e.id, 0, 0, 0, 0, {}});
    Score& s = scores.back();
    s.max_points += e.points;
    int passed = 0, total = 0;
    for (const auto& suite : results["testsuites"]) {
      if (suite["name"] != e.suite) continue;
      for (const auto& t : suite["testsuite"]) {
        ++total;
        if (!t.contains("failures"))
          ++passed;
        else if (s.messages.empty())
          s.messages.push_back(learner_message(t["failures"][0]["failure"].get<std::string>()));
      }
    }
    s.passed += passed;
    s.total += total;
    if (total > 0 && passed == total) s.points += e.points;
  }
  return scores;
}

// The hint line under a failing exercise: "Hint 1 of 3 (the idea): ...".
std::string hint_line(const std::string& id, int level) {
  const std::string_view hint = exercise_hint(id, level);
  if (hint.empty()) return {};
  return "Hint " + std::to_string(level) + " of " + std::to_string(ex::kHintLevels) + " (" +
         std::string(ex::hint_level_name(level)) + "): " + std::string(hint);
}

void write_scores_json(const std::vector<Score>& scores, const std::string& track, int hint_level, int points,
                       int max_points, bool all, const std::string& json_path) {
  nlohmann::json out = {{"track", track}, {"total_points", points}, {"max_points", max_points}, {"passed", all}};
  out["hint_level"] = hint_level;
  out["exercises"] = nlohmann::json::array();
  for (const Score& s : scores) {
    nlohmann::json e = {{"id", s.id},         {"passed", s.passed},         {"total", s.total},
                        {"points", s.points}, {"max_points", s.max_points}, {"messages", s.messages}};
    if (s.failed() && hint_level > 0) e["hint"] = hint_line(s.id, hint_level);
    out["exercises"].push_back(e);
  }
  write_text_file(json_path, out.dump(2) + "\n", "--json");
}

// Prints the table, each failing exercise followed by its first failure and its hint at
// `hint_level` (0: none), and writes the JSON; exit code 0 when every test passed.
int report_scores(const std::vector<Score>& scores, const std::string& track, int hint_level,
                  const std::string& json_path) {
  int points = 0, max_points = 0;
  bool all = true;
  std::printf("%-42s %8s %7s\n", "exercise", "tests", "points");
  for (const Score& s : scores) {
    std::printf("%-42s %4d/%-3d %3d/%-3d\n", s.id.c_str(), s.passed, s.total, s.points, s.max_points);
    if (!s.messages.empty()) std::printf("    %s\n", wrap_text(s.messages.front(), 100, 6).c_str());
    if (s.failed() && hint_level > 0) {
      const std::string hint = hint_line(s.id, hint_level);
      if (!hint.empty()) std::printf("    %s\n", wrap_text(hint, 100, 6).c_str());
    }
    points += s.points;
    max_points += s.max_points;
    all = all && !s.failed();
  }
  std::printf("%-42s %8s %3d/%-3d  %s\n", "total", "", points, max_points, all ? "all passed" : "");
  if (!all)
    std::printf("\nMore help for one exercise: dtlab grade --exercise ID --hint N (1 %s, 2 %s, 3 %s).\n",
                std::string(ex::hint_level_name(1)).c_str(), std::string(ex::hint_level_name(2)).c_str(),
                std::string(ex::hint_level_name(3)).c_str());
  if (!json_path.empty()) write_scores_json(scores, track, hint_level, points, max_points, all, json_path);
  return all ? 0 : 1;
}

int run_grade(const std::string& only, int hint_level, const std::string& json_path) {
  if (!graded_tests_program()) throw Error("this build has no graded tests (configure with -DDTL_BUILD_TESTS=ON)");
  std::vector<ExerciseInfo> chosen;
  std::string filter, ids;
  for (const ExerciseInfo& e : all_exercises()) {
    if (ids.find(e.id) == std::string::npos) ids += (ids.empty() ? "" : " ") + e.id;
    if (!only.empty() && only != e.id) continue;
    chosen.push_back(e);
    filter += (filter.empty() ? "" : ":") + e.suite + ".*";
  }
  if (chosen.empty())
    throw UsageError("--exercise '" + only + "' is not an exercise of this build; use one of: " + ids);
  const nlohmann::json results = run_graded_tests(filter, only.empty() ? "every exercise" : only);
  return report_scores(score(results, chosen), ex::track_name(), hint_level, json_path);
}

}  // namespace

Command add_grade_command(CLI::App& app) {
  CLI::App* g = app.add_subcommand("grade", "Grade the exercises of this build and print a score table");
  auto only = std::make_shared<std::string>();
  auto json_path = std::make_shared<std::string>();
  auto hint_level = std::make_shared<int>(1);
  g->add_option("--exercise,-x", *only, "Grade only this exercise (e.g. ring_all_reduce)");
  g->add_option("--hint", *hint_level,
                "Hint level under each failing exercise: 1 the idea, 2 the formula or the indices, 3 an outline in "
                "words; 0 none")
      ->check(whole_range(0, ex::kHintLevels))
      ->capture_default_str();
  g->add_option("--json", *json_path, "Also write the scores (with each failing exercise's hint) as JSON to this file");
  CLI::Option* exercise = g->get_option("--exercise");
  return [only, hint_level, json_path, exercise] {
    if (exercise->count() > 0 && only->empty())
      throw UsageError("--exercise needs an exercise id, e.g. ring_all_reduce");
    return run_grade(*only, *hint_level, *json_path);
  };
}

}  // namespace dtl::cli
