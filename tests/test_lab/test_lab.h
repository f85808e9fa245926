// The test lab (tests/test_lab/test_lab.cpp): built only in tests, registered by them.
#pragma once

#include "labs/lab.h"

namespace dtl {

LabInfo test_lab_info();

}  // namespace dtl
