// `dtlab simulate --calibrate`: how far the simulator is from a real run on this machine.
//
// For each grid shape it runs the grid lab (`dtlab run grid ... --trace --json`):
//   1. without the emulated link, on the same thread ranks, just before and just after (2),
//      averaged: what each block call computes for and the optimizer and host work per step
//      (labs/simulate/grid_profile.h) — the load on this machine drifts between runs;
//   2. with the link (a preset slowed 100×): the step time to predict.
// and measures what the threads backend adds to each call on the link beyond α-β (thread
// wake-ups around the link's timed wait, the kernel's timer slack): 2 ranks all-reducing 8 B.
// Then it simulates the shape from (1) (or the compute of (2), CalibrationCompute), that cost
// per call and the link's α-β, and prints measured vs
// simulated step time, the error, and rank 0's step split (compute, tp, dp, the rest) both
// ways. --calibrate-compute-us F runs both with the lab's --compute-us F (each F lasts at least
// F µs, each B 2F), for shapes whose real compute is noise when their ranks share 2 cores.
#pragma once

#include <string>

namespace dtl::cli {

// The figure every simulated report carries: the step-time error of the last benchmark's
// predictions (compute from a run without the link), median and largest over its shapes and
// repeats.
struct Calibration {
  double median_error_pct, max_error_pct;
  const char* date;
  const char* command;
};
const Calibration& last_calibration();

// Where the simulator's compute comes from (its communication always comes from α-β):
//   unlinked_run  runs of the same shape without the link, just before and after: a prediction
//   same_run      the block spans and host work of the very run it predicts, so only the
//                 communication, the waits and the schedule are predicted — what stays when
//                 other work on this machine makes any earlier measurement of compute stale
//   flop_rate     the model before: the whole MLP's FLOPs over a 1-rank run's step time, one
//                 rate for every block, no host work, no cost per call (for comparison)
enum class CalibrationCompute { unlinked_run, same_run, flop_rate };
const char* calibration_compute_name(CalibrationCompute c);  // "unlinked-run", "same-run", "flop-rate"

struct CalibrationOptions {
  CalibrationCompute compute = CalibrationCompute::unlinked_run;
  std::string link = "pcie4";
  double compute_us = 0;  // 0: the real compute
  int repeat = 1;         // calibrations per shape (> 1: median and range of the errors)
  bool json = false;
};

// Returns the exit code (0; a failed grid run throws dtl::Error).
int run_calibration(const CalibrationOptions& o);

}  // namespace dtl::cli
