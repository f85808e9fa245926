// What `dtlab grade` shows a learner of a failed graded test: the test's own message (the
// exercise function, the case, what differs), without GoogleTest's framing. The graded
// tests write such messages (tests/grade/grade_util.h); this turns what GoogleTest records
//   labs/collectives/grade_test.cpp:94
//   Failed
//   ring_all_reduce on 4 ranks, 1003 floats, rank 2: element 17 is 6, expected 10
// into its last line, and a stub's "... is not implemented yet: ..." into that first clause.
#pragma once

#include <string>

namespace dtl::cli {

// One line a learner can act on, at most `max_chars` long (cut with "...").
std::string learner_message(const std::string& gtest_failure, std::size_t max_chars = 400);

// Wraps `text` at `width` columns, every line after the first indented by `indent` spaces.
std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent);

}  // namespace dtl::cli
