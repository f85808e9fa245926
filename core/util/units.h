// Sizes on the command line, as nccl-tests reads them: K, M, G are powers of 1024.
//   parse_size("64M") == 67108864, parse_size("4096") == 4096; "-3", "12Q", "" throw.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dtl {

// Throws UsageError naming `what` (e.g. "--bytes") when `text` is not a size.
std::uint64_t parse_size(std::string_view text, std::string_view what = "size");
// 67108864 -> "64M", 1000 -> "1000" (exact binary units only, as the bench prints them).
std::string format_size(std::uint64_t bytes);
// A number as printf's %g writes it ("0.3", "1e+06"): the formulas' words in reports.
std::string format_g(double v);
// Throws UsageError when a run would need more than half of this machine's memory (or of
// the process's address-space limit, or of DTL_MEMORY_LIMIT when set), saying
// how much it needs and has, and which options (`what`) to make smaller. Bad input should
// get that sentence, not std::bad_alloc or the out-of-memory killer.
void require_memory(double bytes, std::string_view what);

}  // namespace dtl
