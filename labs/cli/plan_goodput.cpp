#include "labs/cli/plan_goodput.h"

#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/theory/goodput.h"
#include "core/theory/zero.h"
#include "labs/cli/validators.h"

namespace dtl::cli {

namespace th = dtl::theory;

void add_goodput_options(CLI::App* p, GoodputArgs& a) {
  p->add_option("--mtbf-hours", a.mtbf_hours,
                "One GPU's mean time between failures in hours: adds the checkpoint interval and goodput "
                "(the cluster's MTBF is H / GPUs)")
      ->check(finite_range(1e-6, 1e12));
  p->add_option("--checkpoint-write-gbps", a.write_gbps,
                "With --mtbf-hours: the storage's aggregate write bandwidth in GB/s (default 100)")
      ->check(finite_range(1e-6, 1e9));
  p->add_option("--restart-minutes", a.restart_minutes,
                "With --mtbf-hours: minutes from a failure to training again (default 10)")
      ->check(finite_range(0, 1e7));
}

void require_goodput_options_apply(const CLI::App& p, const GoodputArgs& a, bool search) {
  if (a.mtbf_hours > 0) {
    if (search) throw UsageError("--mtbf-hours prices one plan's checkpoints: drop --search and give --dp --tp --pp");
    return;
  }
  for (const char* flag : {"--checkpoint-write-gbps", "--restart-minutes"})
    if (p.count(flag))
      throw UsageError(std::string(flag) + " acts only with --mtbf-hours H (one GPU's mean time between failures)");
}

double checkpoint_bytes(const th::Plan& pl) {
  const th::ZeroPrecision bytes = th::zero_precision(pl.config.convention);
  return pl.psi * (bytes.param + bytes.optimizer);
}

void add_goodput_rows(Report& rep, const th::Plan& pl, const GoodputArgs& a) {
  const double bytes = checkpoint_bytes(pl);
  const th::Goodput g =
      th::plan_goodput(a.mtbf_hours, pl.cluster.gpus, bytes, a.write_gbps * 1e9, a.restart_minutes * 60);
  char per_gpu[96];
  std::snprintf(per_gpu, sizeof per_gpu, "H / GPUs = %g h / %d", a.mtbf_hours, pl.cluster.gpus);
  rep.add("goodput.mtbf", "cluster MTBF", g.mtbf_s / 3600, "h").source = per_gpu;
  rep.add("goodput.failures_per_day", "failures per day", g.failures_per_day, "").source = "86400 s / MTBF";
  rep.add("goodput.checkpoint", "checkpoint size", bytes / 1e9, "GB").source = "Ψ·(param + optimizer B), no gradients";
  rep.add("goodput.write", "checkpoint write δ", g.write_s, "s").source = "size / write bandwidth";
  rep.add("goodput.restart", "restart R", g.restart_s, "s").source = "--restart-minutes";
  rep.add("goodput.young", "interval, Young", g.young_s, "s").source = "√(2δM)";
  rep.add("goodput.daly", "interval, Daly", g.daly_s, "s").source = "√(2δM)(1 + ⅓√(δ/2M) + ⅑·δ/2M) − δ";
  if (pl.time.total() > 0)
    rep.add("goodput.every_steps", "checkpoint every", g.daly_s / pl.time.total(), "steps").source =
        "Daly's interval / the step time";
  rep.add("goodput.lost", "lost per failure", g.lost_s, "s").source = "M − (τ+δ)/(e^((τ+δ)/M) − 1) + R";
  rep.add("goodput.goodput", "goodput at Daly's interval", 100 * g.goodput, "%").source =
      "τ / (M·e^(R/M)·(e^((τ+δ)/M) − 1))";
  rep.notes.push_back(
      "goodput: failures independent and exponential, the cluster's MTBF M = H/GPUs; the write δ stalls training "
      "(synchronous save) at the storage's aggregate bandwidth; Young 1974, Daly 2006 (core/theory/goodput.h)");
}

}  // namespace dtl::cli
