// Text from a trace, cut to what a view can draw. ImGui reserves four vertices for every
// character of a string before it clips, and its 16-bit index buffer holds 65,536 of them:
// a 100k-character note in a trace aborted the viewer ("Too many vertices in ImDrawList").
// Every string a view takes from a trace's content goes through clip_text; lists through
// shown_count, with "and N more" after them.
//
//   clip_text(std::string(100000, 'x'))  → 2000 x's, "…", " (98000 more characters)"
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dtl::viz {

// At most this many characters of one string are drawn: 8,000 vertices, 25 lines of a
// wrapped paragraph in the widest window (8192 px).
constexpr std::size_t kMaxDrawnChars = 2000;
// At most this many entries of a list (notes, failures) are drawn; then "and N more".
constexpr std::size_t kMaxDrawnItems = 50;

// `text` whole when it has at most `max_chars` bytes, else its first ones (never half a
// UTF-8 character) and "… (N more characters)".
std::string clip_text(std::string_view text, std::size_t max_chars = kMaxDrawnChars);

// How many of `count` entries to draw; a list longer than that ends with more_line(count).
inline std::size_t shown_count(std::size_t count) { return count < kMaxDrawnItems ? count : kMaxDrawnItems; }
std::string more_line(std::size_t count);  // "and 12 more" (count - shown_count(count)); "" if none

}  // namespace dtl::viz
