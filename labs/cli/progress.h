// Progress of a long run on stderr: `dtlab run` hands a ProgressPrinter to the lab as
// LabConfig::progress. A quick run prints nothing; one that goes on past a couple of
// seconds prints what the lab is doing, at most one line a second:
//
//   dtlab: 3.1 s: bucketed: step 12 of 26
//
// DTL_PROGRESS_AFTER_S sets the quiet start (seconds; the tests set 0).
#pragma once

#include <chrono>
#include <mutex>
#include <ostream>
#include <string>

namespace dtl::cli {

class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream& os, double quiet_s = 2.0, double every_s = 1.0);
  void operator()(const std::string& line);  // any thread
  // The quiet start from DTL_PROGRESS_AFTER_S, or `fallback` when it is unset or not a number.
  static double quiet_from_env(double fallback = 2.0);

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& os_;
  double quiet_s_, every_s_;
  Clock::time_point start_ = Clock::now(), last_{};
  bool printed_ = false;
  std::mutex mu_;
};

}  // namespace dtl::cli
