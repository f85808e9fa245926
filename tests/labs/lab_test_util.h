// Runs a lab on thread ranks the way `dtlab run` does, for the lab tests.
#pragma once

#include <cmath>
#include <map>
#include <string>

#include "core/error.h"
#include "core/trace/trace.h"
#include "labs/lab.h"
#include "tests/test_util.h"

namespace dtl::test {

// `cfg` is completed with the lab's defaults; returns rank 0's report. The events land in
// `trace` (made for cfg.ranks ranks), which the caller may inspect afterwards.
inline Report run_lab(const std::string& name, LabConfig cfg, Trace& trace) {
  const LabInfo* lab = find_lab(name);
  EXPECT_NE(lab, nullptr) << name;
  if (!lab) return {};
  cfg = with_defaults(*lab, cfg);
  Report report;
  run_ranks(
      cfg.ranks,
      [&](Comm& c) {
        Report r = lab->run(c, cfg);
        if (c.rank() == 0) report = r;
      },
      &trace);
  return report;
}

// The lab on P thread ranks for its results, not its timings: one timed run of 2 steps
// (unless `options` sets --steps) after the warm-up step.
inline Report run_for_results(const std::string& name, int P, std::map<std::string, std::string> options,
                              Trace& trace) {
  LabConfig cfg;
  cfg.ranks = P;
  cfg.repeat = 1;
  options.emplace("steps", "2");
  cfg.options = options;
  return run_lab(name, cfg, trace);
}

// The measured value of row `id`; fails the test (and gives NaN) when the report has none.
inline double row(const Report& rep, const std::string& id) {
  const ReportRow* r = rep.find(id);
  EXPECT_NE(r, nullptr) << "no row " << id;
  return r ? r->measured : std::nan("");
}

// Fails unless lab `name` refuses `options` on `ranks` ranks with a UsageError saying
// `words`: its option ranges (with_defaults) or its own rules (LabInfo::check_config, what
// `dtlab run` and dtlab-viz ask before any rank starts).
inline void expect_usage_error(const std::string& name, int ranks, std::map<std::string, std::string> options,
                               const std::string& words) {
  const LabInfo* lab = find_lab(name);
  ASSERT_NE(lab, nullptr) << name;
  ASSERT_TRUE(lab->check_config) << name << " has no check_config";
  LabConfig cfg;
  cfg.ranks = ranks;
  cfg.options = std::move(options);
  try {
    lab->check_config(with_defaults(*lab, cfg));
    ADD_FAILURE() << name << ": no error, expected one saying '" << words << "'";
  } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what(); }
}

}  // namespace dtl::test
