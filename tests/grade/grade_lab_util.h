// A lab run on the learner's code as a graded case (tests/grade/<lab>/grade_test_lab.cpp): the run
// `dtlab run` makes, on thread ranks under the grader's watchdog, and every check of its report.
#pragma once

#include <string>

#include "labs/lab.h"
#include "tests/grade/grade_util.h"

namespace dtl::grade {

// Fails the graded test (naming `where` and each failed check) unless lab `name` run with
// `cfg` (its ranks, options, ...; the lab's defaults fill the rest) passes every check.
inline void expect_lab_passes(const std::string& name, LabConfig cfg, const std::string& where) {
  const LabInfo& lab = *find_lab(name);
  cfg = with_defaults(lab, cfg);
  Report rep;
  const GradedRun run = run_graded(cfg.ranks, [&](Comm& c) {
    Report mine = lab.run(c, cfg);
    if (c.rank() == 0) rep = std::move(mine);
  });
  DTL_GRADE_ASSERT(run.error.empty()) << where << ": " << run.error;
  std::string failed;
  for (const ReportRow& row : rep.rows)
    if (!row.passed()) failed += (failed.empty() ? "" : "; ") + row.label;
  DTL_GRADE_EXPECT(rep.ok) << where << " fails its checks: " << failed;
}

}  // namespace dtl::grade
