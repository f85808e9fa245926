// The run command's rank options: --inject-fault / --inject-hang RANK[:STEP] and --slow-rank
// RANK:FACTOR (commands.h), parsed without a bare stoi: bad text is a UsageError naming the flag.
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "labs/cli/commands.h"

namespace dtl::cli {

namespace {
// A whole number in [0, most] from `text`, or a UsageError naming the flag (no bare stoi).
int whole_number(const std::string& s, const std::string& text, const char* flag, long most, const char* form) {
  char* end = nullptr;
  const long v =
      s.empty() || s.find_first_not_of("0123456789") != std::string::npos ? -1 : std::strtol(s.c_str(), &end, 10);
  if (v < 0 || v > most)
    throw UsageError(std::string(flag) + " '" + text + "' is not " + form + " (whole numbers, at most " +
                     std::to_string(most) + ")");
  return int(v);
}
}  // namespace

void parse_rank_step(const std::string& text, const char* flag, int ranks, int& rank, int& step) {
  const auto colon = text.find(':');
  rank = whole_number(text.substr(0, colon), text, flag, 1 << 20, "RANK or RANK:STEP");
  step =
      colon == std::string::npos ? 0 : whole_number(text.substr(colon + 1), text, flag, 1 << 30, "RANK or RANK:STEP");
  if (rank >= ranks)
    throw UsageError(std::string(flag) + " names rank " + std::to_string(rank) + ", but only ranks 0.." +
                     std::to_string(ranks - 1) + " exist");
}

void parse_slow_rank(const std::string& text, int ranks, int& rank, double& factor) {
  const auto colon = text.find(':');
  const std::string r = text.substr(0, colon), f = colon == std::string::npos ? "" : text.substr(colon + 1);
  char* end = nullptr;
  factor = f.empty() ? 0.0 : std::strtod(f.c_str(), &end);
  if (r.empty() || f.empty() || *end != '\0' || !(factor >= 1.0) || factor > 1000.0)
    throw UsageError("--slow-rank '" + text +
                     "' is not RANK:FACTOR with FACTOR between 1 and 1000, e.g. --slow-rank 1:2.5");
  rank = whole_number(r, text, "--slow-rank", 1 << 20, "RANK:FACTOR");
  if (rank >= ranks)
    throw UsageError("--slow-rank names rank " + std::to_string(rank) + ", but only ranks 0.." +
                     std::to_string(ranks - 1) + " exist");
}

}  // namespace dtl::cli
