// `dtlab simulate --checkpoint-every K [--checkpoint-write-gbps G]` (issue 49): synchronous
// checkpoints between the simulated steps, in the report (the write δ, the step with its share
// of it) and in the trace (a save span on every rank after every K-th step).
#pragma once

#include <CLI/CLI.hpp>

#include "core/theory/plan.h"
#include "labs/report.h"
#include "labs/simulate/sim_trace.h"

namespace dtl::cli {

struct SimCheckpointArgs {
  int every = 0;            // steps between checkpoints; 0: none
  double write_gbps = 100;  // the storage's aggregate write bandwidth (plan --mtbf-hours's default)
};

void add_sim_checkpoint_options(CLI::App* p, SimCheckpointArgs& a);
// --checkpoint-write-gbps without --checkpoint-every, or either with --explain, is a UsageError.
void require_sim_checkpoint_options_apply(const CLI::App& p, const SimCheckpointArgs& a);
// δ = the whole checkpoint (plan_goodput.h's checkpoint_bytes) / the aggregate bandwidth.
sim::SimCheckpoints sim_checkpoints(const theory::Plan& pl, const SimCheckpointArgs& a);
void add_sim_checkpoint_rows(Report& rep, const theory::Plan& pl, double step_s, const SimCheckpointArgs& a);

}  // namespace dtl::cli
