#include "labs/cli/progress.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dtl::cli {

ProgressPrinter::ProgressPrinter(std::ostream& os, double quiet_s, double every_s)
    : os_(os), quiet_s_(quiet_s), every_s_(every_s) {}

void ProgressPrinter::operator()(const std::string& line) {
  std::lock_guard lock(mu_);
  const Clock::time_point now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < quiet_s_) return;
  if (printed_ && std::chrono::duration<double>(now - last_).count() < every_s_) return;
  char when[32];
  std::snprintf(when, sizeof when, "%.1f s", elapsed);
  os_ << "dtlab: " << when << ": " << line << std::endl;  // flushed: stderr may be a pipe
  last_ = now;
  printed_ = true;
}

double ProgressPrinter::quiet_from_env(double fallback) {
  const char* text = std::getenv("DTL_PROGRESS_AFTER_S");
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  return *end == '\0' && std::isfinite(v) && v >= 0 ? v : fallback;
}

}  // namespace dtl::cli
