// Cleaning GoogleTest's failure text for `dtlab grade` (labs/cli/grade_messages.h).
#include "labs/cli/grade_messages.h"

#include <sys/wait.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

namespace dtl::cli {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// "path/file.cpp:123" or "unknown file": where GoogleTest says the failure happened.
bool is_location(const std::string& line) {
  if (line == "unknown file") return true;
  const auto colon = line.rfind(':');
  if (colon == std::string::npos || colon + 1 == line.size() || line.find(' ') != std::string::npos) return false;
  for (std::size_t i = colon + 1; i < line.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(line[i]))) return false;
  return true;
}

// An exception that escaped the test: its description (which may span lines) is the message.
bool unwrap_exception(std::string& text) {
  const std::string open = "C++ exception with description \"", close = "\" thrown in ";
  const auto b = text.find(open);
  const auto e = text.rfind(close);
  if (b != std::string::npos && e != std::string::npos && e > b) {
    text = text.substr(b + open.size(), e - b - open.size());
    return true;
  }
  if (text.find("Unknown C++ exception thrown in") != std::string::npos) {
    text = "an exception that is not a std::exception";
    return true;
  }
  return false;
}

// "Expected equality of these values:" then each side's expression, with "Which is: v"
// under it when the value differs from the expression: "is v1, expected v2".
std::size_t equality_block(const std::vector<std::string>& lines, std::size_t i, std::string& out) {
  std::vector<std::string> values;
  std::size_t j = i + 1;
  while (j < lines.size() && values.size() < 2 && starts_with(lines[j], "  ")) {
    std::string v = trim(lines[j]);
    if (j + 1 < lines.size() && starts_with(trim(lines[j + 1]), "Which is: ")) v = trim(lines[++j]).substr(10);
    values.push_back(v);
    ++j;
  }
  if (values.size() == 2) out = "is " + values[0] + ", expected " + values[1];
  return j;
}

// The lines a learner should read, GoogleTest's own lines dropped or reworded.
std::vector<std::string> readable_lines(const std::vector<std::string>& lines) {
  std::vector<std::string> keep;
  for (std::size_t i = 0; i < lines.size();) {
    const std::string line = trim(lines[i]);
    if (line == "Expected equality of these values:") {
      std::string said;
      i = equality_block(lines, i, said);
      if (!said.empty()) keep.push_back(said);
      continue;
    }
    ++i;
    if (line.empty() || line == "Failed" || is_location(line) || starts_with(line, "Value of: ") ||
        line == "Expected: true" || line == "Expected: false" || line == "Actual: true" || line == "Actual: false")
      continue;
    if (starts_with(line, "Actual: ")) {  // "Actual: false (the AssertionResult's message)"
      const auto open = line.find('(');
      if (open != std::string::npos && line.back() == ')')
        keep.push_back(line.substr(open + 1, line.size() - open - 2));
      continue;
    }
    keep.push_back(line);
  }
  return keep;
}

// "rank 0 failed: tree_reduce is not implemented yet: replace ..." → "tree_reduce is not
// implemented yet" (the grader prints the hint itself).
bool shorten_not_implemented(std::string& text) {
  const std::string marker = " is not implemented yet";
  const auto at = text.find(marker);
  if (at == std::string::npos) return false;
  std::size_t b = at;
  while (b > 0 && (std::isalnum(static_cast<unsigned char>(text[b - 1])) || text[b - 1] == '_')) --b;
  if (b == at) return false;
  text = text.substr(b, at - b) + marker;
  return true;
}

}  // namespace

namespace {
// The code points of UTF-8 text; false when it is not valid UTF-8.
bool decode_utf8(const std::string& s, std::vector<std::uint32_t>& out) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int extra = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xe ? 2 : (b >> 3) == 0x1e ? 3 : -1;
    if (extra < 0 || i + std::size_t(extra) >= s.size()) return false;  // a bad lead byte, or cut short
    std::uint32_t cp = extra == 0 ? b : b & (0x3fu >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto c = static_cast<unsigned char>(s[i + std::size_t(k)]);
      if ((c >> 6) != 0x2) return false;
      cp = cp << 6 | (c & 0x3fu);
    }
    out.push_back(cp);
    i += std::size_t(extra) + 1;
  }
  return true;
}
}  // namespace

std::string repair_byte_escapes(const std::string& text) {
  std::vector<std::uint32_t> points;
  if (!decode_utf8(text, points)) return text;
  std::string bytes;
  for (std::uint32_t cp : points) {
    if (cp > 0xff) return text;  // a real character beyond Latin-1: the text was not re-encoded
    bytes += char(cp);
  }
  std::vector<std::uint32_t> check;
  return bytes != text && decode_utf8(bytes, check) ? bytes : text;
}

std::string learner_message(const std::string& gtest_failure, std::size_t max_chars) {
  std::string text = repair_byte_escapes(gtest_failure);
  const bool escaped = unwrap_exception(text);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string joined;
  for (const std::string& line : escaped ? lines : readable_lines(lines)) {
    const std::string t = trim(line);
    if (t.empty()) continue;
    // Lines of a multi-line report ("watchdog: ...:" then a line per rank) stay apart.
    if (!joined.empty()) joined += joined.back() == ':' ? " " : "; ";
    joined += t;
  }
  if (shorten_not_implemented(joined)) return joined;
  if (escaped) joined = "threw: " + joined;
  if (joined.empty()) joined = "failed (GoogleTest gave no message)";
  if (joined.size() > max_chars) joined = joined.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return joined;
}

std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent) {
  std::istringstream words(text);
  std::string out, line;
  auto flush = [&] {
    if (!out.empty()) out += '\n' + std::string(indent, ' ');
    out += line;
    line.clear();
  };
  for (std::string w; words >> w;) {
    const std::size_t lead = out.empty() ? 0 : indent;
    if (!line.empty() && lead + line.size() + 1 + w.size() > width) flush();
    if (!line.empty()) line += ' ';
    line += w;
  }
  if (!line.empty()) flush();
  return out;
}

std::string test_running_at_crash(const std::string& output) {
  std::istringstream in(output);
  std::string running;
  for (std::string line; std::getline(in, line);) {
    if (starts_with(line, "[ RUN      ] "))
      running = trim(line.substr(13));
    else if (starts_with(line, "[       OK ] ") || starts_with(line, "[  FAILED  ] ") ||
             starts_with(line, "[  SKIPPED ] "))
      running.clear();
  }
  return running;
}

std::string crash_words(int system_status) {
  int sig = 0;
  if (WIFSIGNALED(system_status))
    sig = WTERMSIG(system_status);
  else if (WIFEXITED(system_status) && WEXITSTATUS(system_status) > 128)
    sig = WEXITSTATUS(system_status) - 128;  // via sh
  if (sig <= 0) return {};
  const char* abbrev = sigabbrev_np(sig);
  const char* what = sigdescr_np(sig);
  return std::string(abbrev ? "SIG" + std::string(abbrev) + ", " : "") + "signal " + std::to_string(sig) +
         (what ? ": " + std::string(what) : "");
}

std::string last_words(const std::string& output) {
  std::istringstream in(output);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    const std::string t = trim(line);
    if (!t.empty() && t[0] != '[' && !starts_with(t, "Running main()") && !starts_with(t, "Note: Google Test filter"))
      last = t;
  }
  return last;
}

}  // namespace dtl::cli
