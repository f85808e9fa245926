// Exercise: the test lab's weighted sum (tests/test_lab/exercises/test_lab.h).
#include "tests/test_lab/exercises/test_lab.h"

#include "core/error.h"

namespace dtl::ex {

void weighted_sum(Comm&, float*, std::size_t) { throw NotImplemented("weighted_sum"); }

}  // namespace dtl::ex
