// Which graded-tests program `dtlab grade` runs: each executable names its own (dtlab the
// solutions track's exercises_grade_test, the student build's dtlab the stubs'), so this is
// the one file compiled per executable (labs/cli/CMakeLists.txt) and grade_command.cpp is
// compiled once for both.
#pragma once

namespace dtl::cli {

// The program's path, or null in a build without tests (DTL_BUILD_TESTS=OFF).
const char* graded_tests_program();

}  // namespace dtl::cli
