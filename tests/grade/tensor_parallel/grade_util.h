// Shared pieces of the tensor-parallel lab's graded tests (grade_test.cpp: the slices and
// f and g; grade_test_layers.cpp: the parallel linear layers and the vocab-parallel loss):
// the sizes and modes graded, the communication pattern read back from the trace, and the
// comparison with a reference computed in double.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "exercises/tensor_parallel.h"
#include "tests/grade/grade_util.h"

namespace dtl::tp_grade {

using ex::TpMode;

inline const int kTpSizes[] = {1, 2, 4};

inline const TpMode kModes[] = {TpMode::plain, TpMode::sequence_parallel};
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline std::string mode_name(TpMode m) { return m == TpMode::plain ? "plain" : "sequence parallel"; }
inline std::string str(int v) { return std::to_string(v); }

// ---- the communication pattern -------------------------------------------------------------

using Collective = std::pair<std::string, std::uint64_t>;  // name, bytes its event records

inline std::string text(const std::vector<Collective>& cs) {
  if (cs.empty()) return "no library collective";
  std::string s;
  for (std::size_t i = 0; i < cs.size(); ++i)
    s += (i ? ", " : "") + cs[i].first + " of " + std::to_string(cs[i].second) + " B";
  return s;
}

inline std::vector<Collective> collectives_of(const grade::RankPattern& p) {
  std::vector<Collective> cs;
  for (std::size_t i = 0; i < p.collectives.size(); ++i) cs.emplace_back(p.collectives[i], p.collective_bytes[i]);
  return cs;
}

// Every rank called exactly `want` (on one rank: `want` or nothing), and sent no
// point-to-point message.
inline void expect_pattern(const grade::GradedRun& run, const std::vector<Collective>& want, const std::string& what,
                           const std::string& why) {
  const int T = int(run.ranks.size());
  for (int r = 0; r < T; ++r) {
    const grade::RankPattern& p = run.ranks[std::size_t(r)];
    const std::vector<Collective> got = collectives_of(p);
    const bool ok = got == want || (T == 1 && got.empty());
    DTL_GRADE_EXPECT(ok) << what << ", rank " << r << ": its comm stream shows " << text(got) << ", expected "
                         << (want.empty() ? "no communication" : text(want)) << " (" << why << ")";
    DTL_GRADE_EXPECT(p.messages_sent == 0)
        << what << ", rank " << r << ": it sent " << p.messages_sent << " point-to-point messages ("
        << grade::plain(p.bytes_sent) << " B); tensor parallelism here uses the library collectives only";
  }
}

// ---- comparing with the reference -----------------------------------------------------------

// Empty when got matches want within 1e-5 relative, else the first element that does not,
// named (row, column) of a [rows × cols] tensor (by its index when cols is 0: a vector),
// with the largest difference.
inline std::string close_difference(const float* got, const std::vector<double>& want, int cols) {
  std::size_t wrong = 0, first = 0;
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(double(got[i]) - want[i]);
    const bool ok = d <= 1e-5 * std::max(1.0, std::fabs(want[i]));  // false for NaN
    if (!ok && wrong++ == 0) first = i;
    if (std::isnan(d) || std::isnan(worst))
      worst = kNaN;  // NaN sticks
    else
      worst = std::max(worst, d);
  }
  if (wrong == 0) return {};
  const std::size_t c = std::size_t(cols);
  std::string s =
      (cols <= 0 ? "element " + std::to_string(first)
                 : "element (row " + std::to_string(first / c) + ", column " + std::to_string(first % c) + ")") +
      " is " + grade::plain(got[first]) + ", expected " + grade::plain(want[first]);
  s += " (" + std::to_string(wrong) + " of " + std::to_string(want.size()) +
       " elements differ by more than 1e-5 relative, the largest difference " + grade::plain(worst) + ")";
  return s;
}

inline void expect_close(const float* got, const std::vector<double>& want, int cols, const std::string& where) {
  const std::string d = close_difference(got, want, cols);
  if (!d.empty()) ADD_FAILURE() << where << ": " << d;
}

inline std::vector<float> nan_floats(std::size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

// A [rows × cols] block of a row-major matrix with `width` columns.
inline std::vector<double> block(const std::vector<double>& m, int width, int r0, int r1, int c0, int c1) {
  std::vector<double> out;
  for (int i = r0; i < r1; ++i)
    for (int j = c0; j < c1; ++j) out.push_back(m[std::size_t(i) * std::size_t(width) + std::size_t(j)]);
  return out;
}

inline std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

}  // namespace dtl::tp_grade
