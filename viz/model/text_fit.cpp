#include "viz/model/text_fit.h"

namespace dtl::viz {

std::string clip_text(std::string_view text, std::size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  std::size_t cut = max_chars;
  // A UTF-8 continuation byte (10xxxxxx) is inside a character: cut before its lead byte.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "\xe2\x80\xa6 (" + std::to_string(text.size() - cut) + " more characters)";
}

std::string more_line(std::size_t count) {
  const std::size_t hidden = count - shown_count(count);
  return hidden == 0 ? "" : "and " + std::to_string(hidden) + " more";
}

}  // namespace dtl::viz
