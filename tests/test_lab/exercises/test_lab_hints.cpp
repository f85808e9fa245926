// The test lab's hints (tests/test_lab/exercises/test_lab.h), three levels, as every lab keeps them.
#include <array>
#include <span>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 1> kHints = {{
    {"weighted_sum",
     {"Each rank first scales its own vector, then one collective adds the scaled vectors up everywhere.",
      "The weight of rank r is r + 1; the collective is comm.all_reduce with ReduceOp::sum over n floats.",
      "Outline: a loop over the n elements that multiplies each by the weight, then a single all-reduce in place."}},
}};

}  // namespace

std::span<const ExerciseHints> test_lab_hints() { return kHints; }

}  // namespace dtl::ex
