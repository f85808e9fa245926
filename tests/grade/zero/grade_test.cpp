// Graded tests of the ZeRO exercises (exercises/zero.h): shard ranges and prefetch lists
// computed by hand, reduce-scatters and all-gathers run on thread ranks with inputs whose
// averages are exact (so results compare bit for bit), and the communication read back
// from the trace: one reduce-scatter or all-gather of the whole padded unit, started and
// returned without waiting.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>

#include "exercises/zero.h"
#include "labs/collectives/crafted.h"
#include "tests/grade/grade_util.h"

using namespace dtl;
using grade::ceil_div;
using grade::kGradedWorldSizes;

namespace {

// ---- shard_range -------------------------------------------------------------------------

std::string range_case(std::size_t n, int rank, int world) {
  return "shard_range(n " + std::to_string(n) + ", rank " + std::to_string(rank) + ", world " + std::to_string(world) +
         ")";
}

std::string describe(const ex::ShardRange& s) {
  return "chunk " + std::to_string(s.chunk) + ", [" + std::to_string(s.begin) + ", " + std::to_string(s.end) + ")";
}

// The exercise's range, or a failure naming the case when it throws (then nullopt).
std::optional<ex::ShardRange> range_of(std::size_t n, int rank, int world) {
  try {
    return ex::shard_range(n, rank, world);
  } catch (const std::exception& e) {
    ADD_FAILURE() << range_case(n, rank, world) << ": " << e.what();
    return std::nullopt;
  }
}

// Checks every rank of a unit against hand-computed {chunk, begin, end}.
void expect_ranges(std::size_t n, const std::vector<ex::ShardRange>& want, const std::string& why) {
  const int world = int(want.size());
  for (int r = 0; r < world; ++r) {
    const auto got = range_of(n, r, world);
    if (!got) return;
    const ex::ShardRange& w = want[std::size_t(r)];
    DTL_GRADE_EXPECT(got->chunk == w.chunk && got->begin == w.begin && got->end == w.end)
        << range_case(n, r, world) << " is " << describe(*got) << ", expected " << describe(w) << " (" << why << ")";
  }
}

// ---- shard_step ----------------------------------------------------------------------------

std::string step_case(std::size_t n, int rank, int world, bool sharded, DType t) {
  return "shard_step(a unit of " + std::to_string(n) + " " + std::string(dtype_name(t)) + " elements, rank " +
         std::to_string(rank) + " of " + std::to_string(world) + ", " +
         (sharded ? "stage 3: params_are_sharded" : "stages 1 and 2: the whole unit") + ")";
}

// Where p lies in a buffer starting at base, as a learner reads it: "element 9", or the
// byte offset when it is no element of the buffer.
std::string where_in(const void* p, const void* base, std::size_t es, const std::string& buffer) {
  if (p == nullptr) return "null";
  const auto off = static_cast<const std::byte*>(p) - static_cast<const std::byte*>(base);
  if (off >= 0 && off % std::ptrdiff_t(es) == 0)
    return "element " + std::to_string(off / std::ptrdiff_t(es)) + " of " + buffer;
  return "byte offset " + std::to_string(off) + " from " + buffer;
}

// Checks shard_step on every rank of a unit of n over `world`, with the ranges given by hand
// (not by the learner's shard_range, so this exercise does not depend on that one).
void check_shard_step(std::size_t n, const std::vector<ex::ShardRange>& ranges, bool sharded, DType t) {
  const int world = int(ranges.size());
  const std::size_t es = dtype_size(t), chunk = ranges[0].chunk;
  std::vector<std::byte> unit(std::size_t(world) * chunk * es), grads(chunk * es);
  for (int r = 0; r < world; ++r) {
    const ex::ShardRange& s = ranges[std::size_t(r)];
    const std::string w = step_case(n, r, world, sharded, t);
    ex::ShardStep got;
    try {
      got = ex::shard_step({unit.data(), t}, sharded, grads.data(), s);
    } catch (const std::exception& e) { FAIL() << w << ": " << e.what(); }
    // Stage 3's buffer holds only this rank's chunk, which starts at its first owned element.
    const std::size_t first = sharded ? 0 : s.begin;
    const std::string params = sharded ? "the rank's chunk" : "the padded unit";
    DTL_GRADE_EXPECT(got.params == unit.data() + first * es)
        << w << ": params at " << where_in(got.params, unit.data(), es, params) << ", expected element " << first
        << " of " << params << " (the rank owns [" << s.begin << ", " << s.end << ") of the unit)";
    DTL_GRADE_EXPECT(got.grads == grads.data())
        << w << ": grads at " << where_in(got.grads, grads.data(), es, "shard_grads")
        << ", expected element 0 of shard_grads (it holds this rank's chunk from its start)";
    DTL_GRADE_EXPECT(got.count == s.end - s.begin)
        << w << ": count " << got.count << ", expected " << s.end - s.begin << " (the real elements [" << s.begin
        << ", " << s.end << "); the chunk of " << chunk << " includes padding, which is never stepped)";
  }
}

// ---- units_to_gather -----------------------------------------------------------------------

std::string list(const std::vector<int>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

std::string gather_case(const std::vector<int>& order, int position, int depth, const std::vector<bool>& issued) {
  std::vector<int> in_flight;
  for (std::size_t u = 0; u < issued.size(); ++u)
    if (issued[u]) in_flight.push_back(int(u));
  return "units_to_gather(order " + list(order) + ", position " + std::to_string(position) + ", depth " +
         std::to_string(depth) + ", issued " + list(in_flight) + ")";
}

std::optional<std::vector<int>> gather_of(const std::vector<int>& order, int position, int depth,
                                          const std::vector<bool>& issued) {
  try {
    return ex::units_to_gather(order, position, depth, issued);
  } catch (const std::exception& e) {
    ADD_FAILURE() << gather_case(order, position, depth, issued) << ": " << e.what();
    return std::nullopt;
  }
}

// issued[u] for the units in `units` (of `count` units).
std::vector<bool> issued_set(std::size_t count, const std::vector<int>& units) {
  std::vector<bool> issued(count, false);
  for (int u : units) issued[std::size_t(u)] = true;
  return issued;
}

void expect_gather(const std::vector<int>& order, int position, int depth, const std::vector<int>& issued_units,
                   const std::vector<int>& want, const std::string& why) {
  const std::vector<bool> issued = issued_set(order.size(), issued_units);
  const auto got = gather_of(order, position, depth, issued);
  if (!got) return;
  DTL_GRADE_EXPECT(*got == want) << gather_case(order, position, depth, issued) << " is " << list(*got) << ", expected "
                                 << list(want) << " (" << why << ")";
}

const std::vector<int> kForward{0, 1, 2, 3}, kBackward{3, 2, 1, 0};

}  // namespace

// ---- shard_range ------------------------------------------------------------------------------

TEST(ShardRange, EvenAndUnevenUnits) {
  expect_ranges(12, {{3, 0, 3}, {3, 3, 6}, {3, 6, 9}, {3, 9, 12}}, "chunk = ceil(12 / 4) = 3, no padding");
  expect_ranges(10, {{3, 0, 3}, {3, 3, 6}, {3, 6, 9}, {3, 9, 10}},
                "chunk = ceil(10 / 4) = 3; the last rank owns one real element and two of padding");
  expect_ranges(5, {{2, 0, 2}, {2, 2, 4}, {2, 4, 5}}, "chunk = ceil(5 / 3) = 2");
  expect_ranges(9, {{3, 0, 3}, {3, 3, 6}, {3, 6, 9}, {3, 9, 9}},
                "chunk = ceil(9 / 4) = 3, so rank 3 holds padding only: begin = end = n");
  const auto last = range_of(1003, 7, 8);
  if (!last) return;  // range_of reported it
  DTL_GRADE_EXPECT(last->chunk == 126 && last->begin == 882 && last->end == 1003)
      << range_case(1003, 7, 8) << " is " << describe(*last)
      << ", expected chunk 126, [882, 1003) (ceil(1003 / 8) = 126, 7·126 = 882)";
}

TEST(ShardRange, FewerElementsThanRanks) {
  expect_ranges(2, {{1, 0, 1}, {1, 1, 2}, {1, 2, 2}, {1, 2, 2}},
                "chunk = ceil(2 / 4) = 1; ranks 2 and 3 own nothing: begin = end = n");
  expect_ranges(1, {{1, 0, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
                "one element on 8 ranks: rank 0 owns it, the others are empty at begin = end = 1");
}

TEST(ShardRange, OneRankOwnsTheWholeUnit) {
  expect_ranges(7, {{7, 0, 7}}, "one rank: chunk = n, no padding");
  expect_ranges(1, {{1, 0, 1}}, "one rank: chunk = n, no padding");
}

TEST(ShardRange, RangesTileTheUnitInRankOrder) {
  for (std::size_t n = 1; n <= 40; ++n)
    for (int world = 1; world <= 9; ++world) {
      std::size_t expect_begin = 0, chunk0 = 0;
      for (int r = 0; r < world; ++r) {
        const auto s = range_of(n, r, world);
        if (!s) return;
        const std::string w = range_case(n, r, world) + " is " + describe(*s);
        if (r == 0) chunk0 = s->chunk;
        // chunk = ceil(n / N) is the one size with chunk·N >= n > (chunk-1)·N.
        DTL_GRADE_ASSERT(s->chunk * std::size_t(world) >= n && (s->chunk - 1) * std::size_t(world) < n)
            << w << ": expected chunk = ceil(" << n << " / " << world << ") = " << ceil_div(n, std::size_t(world));
        DTL_GRADE_ASSERT(s->chunk == chunk0) << w << ": every rank's chunk is the same, expected " << chunk0;
        DTL_GRADE_ASSERT(s->begin == expect_begin && s->begin <= s->end && s->end <= n && s->end - s->begin <= s->chunk)
            << w << ": expected it to start at " << expect_begin
            << " (where the rank before it ended) and to end at most one chunk later, and at most at n = " << n;
        expect_begin = s->end;
      }
      DTL_GRADE_ASSERT(expect_begin == n) << range_case(n, world - 1, world) << ": the ranks cover [0, " << expect_begin
                                          << "), expected all of [0, " << n << ")";
    }
}

// ---- shard_step ------------------------------------------------------------------------------

TEST(ShardStep, StagesOneAndTwoStepTheOwnedSliceOfTheUnit) {
  // n = 10 on 4 ranks: chunk 3, the last rank owns one real element and two of padding.
  const std::vector<ex::ShardRange> ten{{3, 0, 3}, {3, 3, 6}, {3, 6, 9}, {3, 9, 10}};
  // n = 2 on 4 ranks: ranks 2 and 3 own nothing and step 0 elements.
  const std::vector<ex::ShardRange> two{{1, 0, 1}, {1, 1, 2}, {1, 2, 2}, {1, 2, 2}};
  for (DType t : {DType::f32, DType::bf16}) {
    check_shard_step(10, ten, false, t);
    check_shard_step(2, two, false, t);
  }
}

TEST(ShardStep, StageThreeStepsTheLocalChunk) {
  const std::vector<ex::ShardRange> ten{{3, 0, 3}, {3, 3, 6}, {3, 6, 9}, {3, 9, 10}};
  const std::vector<ex::ShardRange> two{{1, 0, 1}, {1, 1, 2}, {1, 2, 2}, {1, 2, 2}};
  for (DType t : {DType::f32, DType::bf16}) {
    check_shard_step(10, ten, true, t);
    check_shard_step(2, two, true, t);
  }
}

// ---- units_to_gather ---------------------------------------------------------------------------

TEST(UnitsToGather, DepthZeroGathersOnlyTheUnitAboutToCompute) {
  for (int p = 0; p < 4; ++p) {
    const std::vector<int> before(kForward.begin(), kForward.begin() + p);
    expect_gather(kForward, p, 0, before, {p}, "depth 0: no prefetch");
  }
}

TEST(UnitsToGather, PrefetchesTheNextUnitsInForwardOrder) {
  expect_gather(kForward, 0, 1, {}, {0, 1}, "unit 0 to compute now and one ahead");
  expect_gather(kForward, 1, 1, {0, 1}, {2}, "unit 1 was prefetched, so only the next one ahead is new");
  expect_gather(kForward, 2, 1, {0, 1, 2}, {3}, "one ahead of unit 2");
  expect_gather(kForward, 3, 1, {0, 1, 2, 3}, {}, "the last unit is already in flight and nothing follows it");
  expect_gather(kForward, 0, 2, {}, {0, 1, 2}, "unit 0 and two ahead");
  expect_gather(kForward, 1, 2, {0, 1, 2}, {3}, "two ahead of unit 1 are units 2 and 3; only 3 is new");
}

TEST(UnitsToGather, PrefetchesInBackwardOrder) {
  expect_gather(kBackward, 0, 1, {}, {3, 2}, "backward computes unit 3 first, then 2: compute order");
  expect_gather(kBackward, 1, 1, {3, 2}, {1}, "one ahead of unit 2 in backward is unit 1");
  expect_gather(kBackward, 0, 1, {3}, {2}, "unit 3 is still in flight (gathered at the end of forward)");
  expect_gather(kBackward, 0, 3, {2}, {3, 1, 0}, "unit 2 is in flight already; the others in compute order");
  expect_gather({2, 0, 3, 1}, 1, 1, {2, 0}, {3}, "the order is what counts, not the unit numbers");
}

TEST(UnitsToGather, FewerAtTheEndOfTheOrder) {
  expect_gather(kForward, 2, 10, {0, 1}, {2, 3}, "depth 10, but only units 2 and 3 remain");
  expect_gather(kForward, 3, 2, {0, 1, 2}, {3}, "the last unit has nothing after it");
  expect_gather(kBackward, 3, 5, {3, 2, 1}, {0}, "backward's last unit is unit 0");
}

TEST(UnitsToGather, NeverReturnsAnIssuedUnit) {
  expect_gather(kForward, 0, 3, {1}, {0, 2, 3}, "unit 1 is in flight already");
  expect_gather(kForward, 1, 1, {0, 1, 2}, {}, "units 1 and 2 are both in flight");
}

// A whole pass as the lab runs it: at each position issue what is returned, then compute.
// The unit about to compute and the next `depth` must be in flight, nothing further ahead
// may be issued, and no unit twice.
TEST(UnitsToGather, AWholePassIssuesEachUnitOnceAndInTime) {
  const std::vector<int> forward{0, 1, 2, 3, 4, 5}, backward{5, 4, 3, 2, 1, 0};
  for (const auto* order : {&forward, &backward})
    for (int depth = 0; depth <= 7; ++depth) {
      std::vector<bool> issued(order->size(), false);
      for (int p = 0; p < int(order->size()); ++p) {
        const std::string w = gather_case(*order, p, depth, issued);
        const auto got = gather_of(*order, p, depth, issued);
        if (!got) return;
        const std::size_t ahead = std::min(order->size(), std::size_t(p + depth + 1));
        for (int u : *got) {
          DTL_GRADE_ASSERT(u >= 0 && u < int(order->size()) && !issued[std::size_t(u)])
              << w << " is " << list(*got) << ": unit " << u << " is "
              << (u >= 0 && u < int(order->size()) ? "already issued" : "no unit");
          const auto at = std::find(order->begin(), order->end(), u) - order->begin();
          DTL_GRADE_ASSERT(at >= p && std::size_t(at) < ahead)
              << w << " is " << list(*got) << ": unit " << u << " computes at position " << at
              << ", beyond the window of positions " << p << " .. " << ahead - 1;
          issued[std::size_t(u)] = true;
        }
        for (std::size_t i = std::size_t(p); i < ahead; ++i)
          DTL_GRADE_ASSERT(issued[std::size_t((*order)[i])])
              << w << " is " << list(*got) << ": unit " << (*order)[i] << " (position " << i
              << ") is still not issued, expected the units at positions " << p << " .. " << ahead - 1 << " in flight";
      }
    }
}
