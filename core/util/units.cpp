#include "core/util/units.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/error.h"

namespace dtl {

std::uint64_t parse_size(std::string_view text, std::string_view what) {
  auto bad = [&](const std::string& why) {
    return UsageError(std::string(what) + ": '" + std::string(text) + "' is not a size (" + why +
                      "); write a whole number with an optional K, M or G suffix, e.g. 4096, 64M, 1G");
  };
  if (text.empty()) throw bad("empty");
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const std::uint64_t digit = std::uint64_t(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) throw bad("too large");
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) throw bad(text[0] == '-' ? "negative" : "no digits");
  std::uint64_t scale = 1;
  if (i < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[i]))) {
      case 'K': scale = 1ull << 10; break;
      case 'M': scale = 1ull << 20; break;
      case 'G': scale = 1ull << 30; break;
      default: throw bad("unknown suffix '" + std::string(text.substr(i)) + "'");
    }
    ++i;
    if (i < text.size()) throw bad("unexpected '" + std::string(text.substr(i)) + "'");
  }
  if (value > std::numeric_limits<std::uint64_t>::max() / scale) throw bad("too large");
  return value * scale;
}

std::string format_size(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

void require_memory(double bytes, std::string_view what) {
  // The machine's memory, or less when the process runs under an address-space limit
  // (ulimit -v, prlimit --as): then that is what it can allocate.
  double have = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) have = std::min(have, double(as.rlim_cur));
  // DTL_MEMORY_LIMIT=8G: a cap of one's own (a shared machine, or a sanitizer build where
  // an address-space limit cannot be used).
  if (const char* cap = std::getenv("DTL_MEMORY_LIMIT"); cap && *cap)
    have = std::min(have, double(parse_size(cap, "DTL_MEMORY_LIMIT")));
  if (have > 0 && bytes > 0.5 * have) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "this run needs about %.1f GB of memory and the process may use %.1f GB; make ",
                  bytes * 1e-9, have * 1e-9);
    throw UsageError(msg + std::string(what) + " smaller");
  }
}

std::string format_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace dtl
