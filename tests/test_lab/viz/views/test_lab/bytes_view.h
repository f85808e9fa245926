// The test lab's own view (tests/test_lab/viz/views/test_lab/bytes_view.cpp): each rank's all-reduced
// bytes so far beside the formula 4n. Declared here only so its test can read what it
// showed; a lab's view needs no header (its file registers the panel).
#pragma once

#include <vector>

#include "viz/app/views.h"

namespace dtl::viz {

struct BytesView final : Panel {
  std::vector<double> shown_bytes;  // per rank, what the last frame drew (the test reads it)
  void Draw(const Frame& f) override;
};

}  // namespace dtl::viz
