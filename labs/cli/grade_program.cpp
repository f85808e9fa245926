// The graded-tests program of this executable (grade_program.h): DTL_GRADE_TEST_EXE is set
// per executable in labs/cli/CMakeLists.txt.
#include "labs/cli/grade_program.h"

namespace dtl::cli {

const char* graded_tests_program() {
#ifdef DTL_GRADE_TEST_EXE
  return DTL_GRADE_TEST_EXE;
#else
  return nullptr;
#endif
}

}  // namespace dtl::cli
