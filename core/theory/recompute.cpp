// The recomputation policies' names (recompute.h), as --recompute takes them.
#include "core/theory/recompute.h"

#include <string>

#include "core/error.h"

namespace dtl::theory {

Recompute parse_recompute(std::string_view name) {
  if (name == "none") return Recompute::none;
  if (name == "selective") return Recompute::selective;
  if (name == "full") return Recompute::full;
  if (name == "selective-op") return Recompute::selective_op;
  throw UsageError("recomputation is none, selective, full or selective-op, not '" + std::string(name) + "'");
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::selective_op: return "selective-op";
  }
  return "?";
}

}  // namespace dtl::theory
