// `dtlab plan --mtbf-hours H`: how often the planned run should checkpoint and what failures
// cost it (core/theory/goodput.h), as report rows beside the plan's.
#pragma once

#include <CLI/CLI.hpp>

#include "core/theory/plan.h"
#include "labs/report.h"

namespace dtl::cli {

struct GoodputArgs {
  double mtbf_hours = 0;        // one GPU's MTBF; 0: no goodput rows
  double write_gbps = 100;      // the storage's aggregate write bandwidth (an assumption)
  double restart_minutes = 10;  // reschedule, reload, warm up (an assumption)
};

void add_goodput_options(CLI::App* p, GoodputArgs& a);
// --checkpoint-write-gbps and --restart-minutes act only with --mtbf-hours; --mtbf-hours prices
// one plan, not --search's list: a UsageError otherwise.
void require_goodput_options_apply(const CLI::App& p, const GoodputArgs& a, bool search);
// One whole checkpoint: Ψ · (the parameter's bytes + the optimizer state's) under the plan's
// convention (gradients are not saved): 14 B/param under 2+2+12.
double checkpoint_bytes(const theory::Plan& pl);
void add_goodput_rows(Report& rep, const theory::Plan& pl, const GoodputArgs& a);

}  // namespace dtl::cli
