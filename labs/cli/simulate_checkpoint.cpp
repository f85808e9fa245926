#include "labs/cli/simulate_checkpoint.h"

#include <string>

#include "core/error.h"
#include "labs/cli/plan_goodput.h"
#include "labs/cli/validators.h"

namespace dtl::cli {

void add_sim_checkpoint_options(CLI::App* p, SimCheckpointArgs& a) {
  p->add_option("--checkpoint-every", a.every,
                "Save a checkpoint (synchronous) after every K steps: its write in the report and the trace")
      ->check(whole_range(1, 1000000));
  p->add_option("--checkpoint-write-gbps", a.write_gbps,
                "With --checkpoint-every: the storage's aggregate write bandwidth in GB/s (default 100)")
      ->check(finite_range(1e-6, 1e9));
}

void require_sim_checkpoint_options_apply(const CLI::App& p, const SimCheckpointArgs& a) {
  if (a.every == 0 && p.count("--checkpoint-write-gbps"))
    throw UsageError("--checkpoint-write-gbps sets how fast the checkpoints are written: add --checkpoint-every K");
  if (a.every > 0 && p.count("--explain"))
    throw UsageError("--explain breaks down one step, without checkpoints: drop --checkpoint-every or --explain");
}

sim::SimCheckpoints sim_checkpoints(const theory::Plan& pl, const SimCheckpointArgs& a) {
  if (a.every == 0) return {};
  return {a.every, checkpoint_bytes(pl) / (a.write_gbps * 1e9)};
}

// Every rank writes its shard of the checkpoint at once, so the step waits for the whole of it
// over the storage's aggregate bandwidth: step + δ/K on average, δ/(K·step + δ) of the wall time.
void add_sim_checkpoint_rows(Report& rep, const theory::Plan& pl, double step_s, const SimCheckpointArgs& a) {
  if (a.every == 0) return;
  const sim::SimCheckpoints c = sim_checkpoints(pl, a);
  const std::string K = std::to_string(a.every);
  rep.add("sim.checkpoint_size", "checkpoint size", checkpoint_bytes(pl) / 1e9, "GB").source =
      "Ψ·(param + optimizer B), no gradients (plan --mtbf-hours's)";
  rep.add("sim.checkpoint_write", "checkpoint write δ", c.write_s, "s").source =
      "size / " + plain_number(a.write_gbps) + " GB/s aggregate, every rank its shard at once";
  rep.add("sim.step_with_checkpoints", "step with checkpoints, average", step_s + c.write_s / a.every, "s").source =
      "step + δ/" + K;
  rep.add("sim.checkpoint_share", "wall time spent saving", 100 * c.write_s / (a.every * step_s + c.write_s), "%")
      .source = "δ / (" + K + "·step + δ)";
}

}  // namespace dtl::cli
