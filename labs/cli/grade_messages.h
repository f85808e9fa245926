// What `dtlab grade` shows a learner of a failed graded test: the test's own message (the
// exercise function, the case, what differs), without GoogleTest's framing. The graded
// tests write such messages (tests/grade/grade_util.h); this turns what GoogleTest records
//   tests/grade/collectives/grade_test.cpp:94
//   Failed
//   ring_all_reduce on 4 ranks, 1003 floats, rank 2: element 17 is 6, expected 10
// into its last line, and a stub's "... is not implemented yet: ..." into that first clause.
#pragma once

#include <string>

namespace dtl::cli {

// GoogleTest's JSON writes each byte of a UTF-8 message as its own \u00XX escape, so the
// parsed text reads "2Â·5" for "2·5". Text whose code points are all bytes and whose bytes
// are valid UTF-8 is turned back into those bytes; any other text is returned as it is.
std::string repair_byte_escapes(const std::string& text);

// One line a learner can act on, at most `max_chars` long (cut with "..."), in clean UTF-8.
std::string learner_message(const std::string& gtest_failure, std::size_t max_chars = 400);

// When the grade program dies (the learner's code overran a buffer, freed twice, ...):
// the test GoogleTest was running, from its output (the last "[ RUN      ] Suite.Test" with
// no result line after it; "" when none), ...
std::string test_running_at_crash(const std::string& output);
// ... how it died, from std::system's status ("SIGABRT, signal 6: Aborted"; "" when it
// exited normally), ...
std::string crash_words(int system_status);
// ... and its last words: the last line of its output that is not GoogleTest's (the C
// library's "munmap_chunk(): invalid pointer", a sanitizer's summary; "" when none).
std::string last_words(const std::string& output);

// Wraps `text` at `width` columns, every line after the first indented by `indent` spaces.
std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent);

}  // namespace dtl::cli
