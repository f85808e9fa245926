#include "core/theory/goodput.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace dtl::theory {

double cluster_mtbf_seconds(double gpu_mtbf_hours, int gpus) { return gpu_mtbf_hours * 3600.0 / gpus; }

double young_interval(double write_s, double mtbf_s) { return std::sqrt(2 * write_s * mtbf_s); }

double daly_interval(double write_s, double mtbf_s) {
  if (write_s >= 2 * mtbf_s) return mtbf_s;  // Daly's eq. 37, second branch
  const double x = write_s / (2 * mtbf_s);
  return std::sqrt(2 * write_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - write_s;
}

double expected_wall_per_work(double interval_s, double write_s, double restart_s, double mtbf_s) {
  // expm1 keeps (e^{(τ+δ)/M} − 1) exact when τ+δ ≪ M (a second of work on a 3-hour MTBF)
  return mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + write_s) / mtbf_s) / interval_s;
}

double goodput(double interval_s, double write_s, double restart_s, double mtbf_s) {
  return 1 / expected_wall_per_work(interval_s, write_s, restart_s, mtbf_s);
}

double lost_per_failure(double interval_s, double write_s, double restart_s, double mtbf_s) {
  const double segment = interval_s + write_s;
  // E[t | t < L] for an exponential t of mean M: M − L/(e^{L/M} − 1)
  return mtbf_s - segment / std::expm1(segment / mtbf_s) + restart_s;
}

Goodput plan_goodput(double gpu_mtbf_hours, int gpus, double checkpoint_bytes, double write_Bps, double restart_s) {
  if (!(gpu_mtbf_hours > 0)) throw UsageError("--mtbf-hours must be > 0 (one GPU's mean time between failures)");
  if (gpus < 1) throw UsageError("goodput needs the cluster's GPU count (--gpus or dp·tp·pp)");
  if (!(write_Bps > 0)) throw UsageError("--checkpoint-write-gbps must be > 0");
  if (!(checkpoint_bytes > 0)) throw UsageError("goodput needs a checkpoint of more than 0 bytes");
  if (!(restart_s >= 0)) throw UsageError("--restart-minutes must be ≥ 0");
  Goodput g;
  g.mtbf_s = cluster_mtbf_seconds(gpu_mtbf_hours, gpus);
  g.checkpoint_bytes = checkpoint_bytes;
  g.write_s = checkpoint_bytes / write_Bps;
  g.restart_s = restart_s;
  g.young_s = young_interval(g.write_s, g.mtbf_s);
  g.daly_s = daly_interval(g.write_s, g.mtbf_s);
  g.lost_s = lost_per_failure(g.daly_s, g.write_s, g.restart_s, g.mtbf_s);
  g.failures_per_day = 86400.0 / g.mtbf_s;
  g.goodput = goodput(g.daly_s, g.write_s, g.restart_s, g.mtbf_s);
  return g;
}

}  // namespace dtl::theory
