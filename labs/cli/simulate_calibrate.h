// `dtlab simulate --calibrate`: how far the simulator is from a real run on this machine.
// It runs small grid-lab configurations (`dtlab run grid ... --link PRESET --json`), measures
// the compute rate from a 1-rank run, simulates the same configurations with that rate and
// the link's α-β, and prints measured vs simulated step time and the error.
#pragma once

#include <string>

namespace dtl::cli {

// The figure every simulated report carries: the largest error the last calibration found.
struct Calibration {
  double max_error_pct;
  const char* date;
  const char* command;
};
const Calibration& last_calibration();

// Returns the exit code (0; 1 when a grid run fails).
int run_calibration(const std::string& link_preset, bool json);

}  // namespace dtl::cli
