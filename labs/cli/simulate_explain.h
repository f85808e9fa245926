// `dtlab simulate --explain [--versus dp=128,tp=4,pp=32]`: where each millisecond of the step goes
// (core/theory/step_model.h's explain_step), for one layout or two side by side.
#pragma once

#include <string>

#include "core/theory/plan.h"
#include "labs/cli/plan_options.h"
#include "labs/report.h"

namespace dtl::cli {

// The second layout: `base` with the keys of "key=value,key=value" over it (dp, tp, pp, cp, ep,
// zero, micro-batches, micro-batch-size, recompute); another key or a bad value is a UsageError.
PlanArgs versus_args(const PlanArgs& base, const std::string& text);
// The step of `a` (and of `b` beside it) by where its time goes; `simulated_a` is simulate's step of
// `a`, shown beside the sum (they agree: one model).
Report explain_report(const theory::Plan& a, double simulated_a, const theory::Plan* b);

}  // namespace dtl::cli
