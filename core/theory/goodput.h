// How often to checkpoint a run on a cluster that fails, and what the failures cost: pure
// functions of the mean time between failures, the checkpoint's write time and the restart time.
//
// Inputs (seconds): M the cluster's mean time between failures, δ the time to write one
// checkpoint, R the time to restart after a failure (reschedule, load, warm up), τ the useful
// work between two checkpoints. Failures are independent and exponential (a Poisson process),
// so a cluster of G GPUs that each fail every H hours on average fails every M = H/G hours.
//
//   Young (1974)            τ = √(2·δ·M)       minimises the first-order waste δ/τ + τ/(2M)
//   Daly (2006), eq. 37     τ = √(2δM)·[1 + ⅓·√(δ/(2M)) + ⅑·δ/(2M)] − δ   for δ < 2M, else τ = M
//   expected wall time      T_w = M·e^{R/M}·(e^{(τ+δ)/M} − 1) · T_s/τ   for T_s of useful work
//                           (Daly 2006, eq. 20: the exact expectation under exponential failures)
//   goodput                 T_s / T_w = τ / (M·e^{R/M}·(e^{(τ+δ)/M} − 1))
//   work lost per failure   the expected time into a segment of τ+δ at which it fails,
//                           M − (τ+δ)/(e^{(τ+δ)/M} − 1) (≈ (τ+δ)/2 when τ+δ ≪ M), plus R
//
// Sources: J. W. Young, "A first order approximation to the optimum checkpoint interval",
// CACM 17(9), 1974; J. T. Daly, "A higher order estimate of the optimum checkpoint interval
// for restart dumps", FGCS 22(3), 2006.
#pragma once

namespace dtl::theory {

// The cluster's mean time between failures from one GPU's: H / gpus (independent failures).
double cluster_mtbf_seconds(double gpu_mtbf_hours, int gpus);
double young_interval(double write_s, double mtbf_s);
double daly_interval(double write_s, double mtbf_s);
// Daly's T_w / T_s: the wall time per second of useful work at interval τ (≥ 1).
double expected_wall_per_work(double interval_s, double write_s, double restart_s, double mtbf_s);
double goodput(double interval_s, double write_s, double restart_s, double mtbf_s);
// The useful work and checkpoint time a failure throws away, on average, plus the restart.
double lost_per_failure(double interval_s, double write_s, double restart_s, double mtbf_s);

struct Goodput {
  double mtbf_s = 0;                  // the cluster's
  double checkpoint_bytes = 0;        // one whole checkpoint
  double write_s = 0, restart_s = 0;  // δ, R
  double young_s = 0, daly_s = 0;     // the two optimal intervals
  double lost_s = 0;                  // per failure, at Daly's interval
  double failures_per_day = 0;
  double goodput = 0;  // at Daly's interval
};
// Every figure above for a cluster of `gpus` GPUs of MTBF `gpu_mtbf_hours` each, a checkpoint of
// `checkpoint_bytes` written at `write_Bps` (the storage's aggregate bandwidth), and a restart of
// `restart_s`. Throws UsageError for a non-positive MTBF, bandwidth or GPU count, or R < 0.
Goodput plan_goodput(double gpu_mtbf_hours, int gpus, double checkpoint_bytes, double write_Bps, double restart_s);

}  // namespace dtl::theory
