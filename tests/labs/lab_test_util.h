// Runs a lab on thread ranks the way `dtlab run` does, for the lab tests.
#pragma once

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
  run_ranks(cfg.ranks, [&](Comm& c) {
    Report r = lab->run(c, cfg);
    if (c.rank() == 0) report = r;
  }, &trace);
  return report;
}

}  // namespace dtl::test
