// The test lab's view: a bar per rank of the bytes its all-reduces moved up to the cursor,
// the formula's 4n as a line (n: the lab's --length). Small on purpose: it proves that a
// lab's own view is its folder's file and nothing else (docs/reference.md, "Adding a lab").
#include "tests/test_lab/viz/views/test_lab/bytes_view.h"

#include <algorithm>
#include <cstdio>

#include "tests/test_lab/labs/test_lab/test_lab.h"

namespace dtl::viz {

void BytesView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  shown_bytes.assign(std::size_t(std::max(d.ranks, 0)), 0.0);
  const std::int64_t now = f.cursor_time();
  for (const Event& e : d.events)
    if (e.kind == EventKind::collective && e.rank >= 0 && e.rank < d.ranks && (f.session.finished() || e.end_ns <= now))
      shown_bytes[std::size_t(e.rank)] += double(e.bytes);
  const double n = f.session.live() ? double(test_lab_length(f.session.config().options)) : 0;
  ImGui::Text("bytes all-reduced per rank; formula 4n = %.0f B", 4 * n);
  double top = 4 * n;
  for (double b : shown_bytes) top = std::max(top, b);
  for (std::size_t r = 0; r < shown_bytes.size(); ++r) {
    char text[64];
    std::snprintf(text, sizeof text, "rank %zu: %.0f B", r, shown_bytes[r]);
    ImGui::ProgressBar(top > 0 ? float(shown_bytes[r] / top) : 0.0f, ImVec2(-1, 0), text);
  }
}

namespace {
std::unique_ptr<Panel> make_bytes(const PanelSettings&) { return std::make_unique<BytesView>(); }
const bool registered = register_panel({kBytesView, "Bytes per rank: measured vs 4n", make_bytes});
}  // namespace

}  // namespace dtl::viz
