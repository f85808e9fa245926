// What `dtlab grade` makes of GoogleTest's failure texts (labs/cli/grade_messages.h): the
// graded test's message, never file:line, "Failed", "Value of" or "thrown in the test body".
#include "labs/cli/grade_messages.h"

#include <gtest/gtest.h>

using dtl::cli::learner_message;
using dtl::cli::wrap_text;

TEST(GradeMessages, AGradedCheckKeepsOnlyItsMessage) {
  EXPECT_EQ(learner_message("tests/grade/collectives/grade_test.cpp:94\nFailed\n"
                            "ring_all_reduce on 4 ranks, 1001 floats, rank 2: element 17 is 6, expected 10\n"),
            "ring_all_reduce on 4 ranks, 1001 floats, rank 2: element 17 is 6, expected 10");
}

TEST(GradeMessages, AStubIsNamedWithoutItsHintPointer) {
  const std::string stub =
      "tree_reduce is not implemented yet: replace the reference_until_written line of its stub (exercises/<lab>.cpp) "
      "with your code; hints: dtlab "
      "grade --exercise tree --hint 1 (2 and 3 say more)";
  EXPECT_EQ(learner_message("/src/tests/grade/grade_util.h:120\nFailed\ntree_all_reduce on 2 ranks, 1 float: rank 0 "
                            "failed: " +
                            stub),
            "tree_reduce is not implemented yet");
  EXPECT_EQ(learner_message("unknown file\nC++ exception with description \"" + stub + "\" thrown in the test body."),
            "tree_reduce is not implemented yet");
}

TEST(GradeMessages, AnEscapedExceptionIsItsDescription) {
  EXPECT_EQ(learner_message("unknown file\nC++ exception with description \"vector::_M_range_check: __n (which is 9) "
                            ">= this->size() (which is 4)\" thrown in the test body."),
            "threw: vector::_M_range_check: __n (which is 9) >= this->size() (which is 4)");
  EXPECT_EQ(learner_message("unknown file\nUnknown C++ exception thrown in the test body."),
            "threw: an exception that is not a std::exception");
}

TEST(GradeMessages, GoogleTestsOwnAssertionsAreReworded) {
  EXPECT_EQ(learner_message("a.cpp:3\nExpected equality of these values:\n  p.messages_sent\n    Which is: 4\n"
                            "  2 * (P - 1)\n    Which is: 6\none message per step"),
            "is 4, expected 6; one message per step");
  EXPECT_EQ(learner_message("a.cpp:3\nValue of: grade::same(x)\n  Actual: false (rank 1: element 0 is 2, expected 3)\n"
                            "Expected: true\n"),
            "rank 1: element 0 is 2, expected 3");
}

TEST(GradeMessages, AMultiLineDeadlockReportBecomesOneLine) {
  const std::string m = learner_message(
      "x.cpp:1\nFailed\nring_all_reduce on 3 ranks, 8 floats: watchdog: no rank made progress for 5 s:\n"
      "  rank 0 waits recv from rank 2 tag 12288 (8 B)\n  rank 1 waits recv from rank 0 tag 12288 (8 B)\n");
  EXPECT_EQ(m,
            "ring_all_reduce on 3 ranks, 8 floats: watchdog: no rank made progress for 5 s: rank 0 waits recv from "
            "rank 2 tag 12288 (8 B); rank 1 waits recv from rank 0 tag 12288 (8 B)");
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_LE(learner_message(std::string(5000, 'x'), 100).size(), 100u);
}

TEST(GradeMessages, WrapIndentsContinuationLines) {
  EXPECT_EQ(wrap_text("aaa bbb ccc ddd", 8, 2), "aaa bbb\n  ccc\n  ddd");
  EXPECT_EQ(wrap_text("short", 80, 4), "short");
  EXPECT_EQ(wrap_text("averyveryverylongword x", 5, 1), "averyveryverylongword\n x");
}

// GoogleTest's JSON escapes each byte of "·", "×" and "→" apart ("2Â·5"): the message a
// learner reads is clean UTF-8 again, and text that was never re-encoded stays as it is.
TEST(GradeMessages, BytesEscapedOneByOneAreUtf8Again) {
  const std::string mangled =
      "padded unit of 2\xc3\x82\xc2\xb7"
      "5 elements; rows 8 \xc3\x83\xc2\x97 in 8 \xc3\xa2\xc2\x86\xc2\x92 out 12";
  EXPECT_EQ(dtl::cli::repair_byte_escapes(mangled),
            "padded unit of 2\xc2\xb7"
            "5 elements; rows 8 \xc3\x97 in 8 \xe2\x86\x92 out 12");
  EXPECT_EQ(learner_message("x.cpp:3\nFailed\n" + mangled),
            "padded unit of 2\xc2\xb7"
            "5 elements; rows 8 \xc3\x97 in 8 \xe2\x86\x92 out 12");
  for (const std::string clean : {"2\xc2\xb7"
                                  "5 and 8 \xc3\x97 8",
                                  "plain ascii", "caf\xc3\xa9", "\xce\xa8 = 12"})
    EXPECT_EQ(dtl::cli::repair_byte_escapes(clean), clean) << clean;  // "é" alone: Latin-1 bytes that are not UTF-8
}

// A crash in the learner's code is named: the test it happened in (the last one GoogleTest
// started and never finished), the signal, and the program's last words.
TEST(GradeMessages, ACrashIsNamedByItsTestSignalAndLastWords) {
  const std::string output =
      "Running main() from gtest_main.cc\nNote: Google Test filter = Tp*\n[==========] Running 3 tests\n"
      "[ RUN      ] TpSlices.Columns\n[       OK ] TpSlices.Columns (1 ms)\n"
      "[ RUN      ] TpLayers.ColumnParallelBackward\nmunmap_chunk(): invalid pointer\n";
  EXPECT_EQ(dtl::cli::test_running_at_crash(output), "TpLayers.ColumnParallelBackward");
  EXPECT_EQ(dtl::cli::last_words(output), "munmap_chunk(): invalid pointer");
  EXPECT_EQ(dtl::cli::test_running_at_crash("[ RUN      ] A.B\n[  FAILED  ] A.B (2 ms)\n"), "");  // it finished
  EXPECT_EQ(dtl::cli::crash_words(6 /* killed by SIGABRT: the status's low bits */), "SIGABRT, signal 6: Aborted");
  EXPECT_EQ(dtl::cli::crash_words((128 + 11) << 8 /* sh's exit status for a child killed by SIGSEGV */),
            "SIGSEGV, signal 11: Segmentation fault");
  EXPECT_EQ(dtl::cli::crash_words(1 << 8), "");  // exit 1: some tests failed, no crash
}
