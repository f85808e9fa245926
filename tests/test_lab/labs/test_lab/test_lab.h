// The test lab (tests/test_lab/labs/test_lab/test_lab.cpp): built only in tests, registered by them.
#pragma once

#include "labs/lab.h"

namespace dtl {

// Its own view in dtlab-viz, declared and registered in its folder
// (tests/test_lab/viz/views/test_lab/bytes_view.cpp) as any lab's (docs/reference.md, "Adding a lab").
inline constexpr ViewKind kBytesView{"bytes"};
LabInfo test_lab_info();
int test_lab_length(const LabOptions& options);  // --length, through the lab's option table

}  // namespace dtl
