// Graded tests of the ZeRO exercises (labs/zero/exercises.h): shard ranges and prefetch lists
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

#include "labs/zero/exercises.h"
#include "labs/collectives/crafted.h"
#include "tests/grade/grade_util.h"

using namespace dtl;
using grade::kGradedWorldSizes;

namespace {

std::size_t ceil_div(std::size_t n, std::size_t world) { return (n + world - 1) / world; }

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

// ---- ranks that must not wait --------------------------------------------------------------

// Tells whether an exercise returns before its collective completes. Every rank but the
// last calls the exercise and checks in on return; the last rank calls it only once all the
// others have checked in, or after a grace period. A collective needs every rank, so an
// exercise that waits for it inside cannot return before the last rank joins: those ranks
// are still missing when the grace period ends (then the last rank joins and frees them).
class HoldBack {
 public:
  // Makes the exercise's call; the ranks but the last (check_in) check in once it returned,
  // or threw (so the last rank does not wait for a stub that has failed already).
  Request call(bool check_in, const std::function<Request()>& exercise) {
    try {
      Request req = exercise();
      if (check_in) returned();
      return req;
    } catch (...) {
      if (check_in) returned();
      throw;
    }
  }
  // On the last rank, before its call: how many of the `others` ranks had not returned
  // within the grace period.
  int still_inside(int others) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(1500), [&] { return returned_ == others; });
    return others - returned_;
  }

 private:
  void returned() {
    std::lock_guard lock(mu_);
    ++returned_;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int returned_ = 0;
};

// The events of one collective on one rank: what run_graded read from its comm stream.
std::string collectives_of(const grade::RankPattern& p) {
  if (p.collectives.empty()) return "no library collective";
  std::string s;
  for (std::size_t i = 0; i < p.collectives.size(); ++i)
    s += (i ? ", " : "") + p.collectives[i] + " of " + std::to_string(p.collective_bytes[i]) + " B";
  return s;
}

// One `name` of `bytes` on every rank's comm stream, nothing else.
void expect_one_collective(const grade::GradedRun& run, const std::string& name, std::uint64_t bytes,
                           const std::string& what, const std::string& why) {
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const grade::RankPattern& p = run.ranks[r];
    const bool one = p.collectives.size() == 1 && p.collectives[0] == name && p.collective_bytes[0] == bytes;
    DTL_GRADE_EXPECT(one) << what << ", rank " << r << ": its comm stream shows " << collectives_of(p)
                          << ", expected one " << name << " of " << bytes << " B (" << why << ")";
  }
}

// Element i of a padded unit in the tests below: small integers, exact in bf16 and fp32.
double unit_value(std::size_t i) { return double(int(i % 17) - 8); }

// Rank r's offset, chosen so the offsets of ranks 0 .. P-1 sum to 0: 0, 1, .., P-2 and
// -(0 + 1 + .. + P-2). Then the average of unit_value(i) + offset(r) over the ranks is
// unit_value(i) exactly, and every partial sum is a small integer, exact in any order.
double rank_offset(int r, int P) { return r < P - 1 ? double(r) : -double((P - 1) * (P - 2) / 2); }

// The reduce-scatter case: every rank's padded gradients (n real elements, padding 0), and
// each rank's shard after the call and the wait, compared with the average computed here.
void check_reduce_scatter(int P, std::size_t n, DType t) {
  const std::size_t chunk = ceil_div(n, std::size_t(P)), es = dtype_size(t);
  const std::string w = grade::on_ranks("reduce_scatter_gradients", P) + ", a unit of " + std::to_string(n) + " " +
                        std::string(dtype_name(t)) + " gradients (chunk " + std::to_string(chunk) + ")";
  const auto run = grade::run_graded(P, [&](Comm& c) {
    const int me = c.rank();
    std::vector<std::byte> unit(std::size_t(P) * chunk * es), shard(chunk * es);
    for (std::size_t i = 0; i < std::size_t(P) * chunk; ++i)
      store_element(unit.data(), i, t, i < n ? unit_value(i) + rank_offset(me, P) : 0.0);
    for (std::size_t i = 0; i < chunk; ++i)  // what the exercise never writes stays NaN
      store_element(shard.data(), i, t, std::numeric_limits<double>::quiet_NaN());
    Request req = ex::reduce_scatter_gradients(c, {unit.data(), t}, shard.data(), chunk);
    req.wait();
    std::vector<double> got(chunk), want(chunk);
    for (std::size_t i = 0; i < chunk; ++i) {
      const std::size_t global = std::size_t(me) * chunk + i;  // this rank's block of the padded unit
      got[i] = element_as_double(shard.data(), i, t);
      want[i] = global < n ? unit_value(global) : 0.0;
    }
    grade::expect_same(got, want, w + ", rank " + std::to_string(me) + "'s shard (elements " +
                                      std::to_string(std::size_t(me) * chunk) + " .. " +
                                      std::to_string(std::size_t(me + 1) * chunk - 1) + " of the unit, averaged)");
  });
  DTL_ASSERT_RAN(run, w);
  expect_one_collective(run, "reduce_scatter", std::uint64_t(P) * chunk * es, w,
                        "its input is the whole padded unit of " + std::to_string(P) + "·" + std::to_string(chunk) +
                            " elements; never an all-reduce, which moves twice the bytes");
}

// The all-gather case: each rank fills only its own chunk, the rest NaN; after the call and
// the wait every rank's padded unit must be the concatenation of all the chunks.
void check_all_gather(int P, std::size_t n, DType t) {
  const std::size_t chunk = ceil_div(n, std::size_t(P)), es = dtype_size(t), padded = std::size_t(P) * chunk;
  const std::string w = grade::on_ranks("all_gather_params", P) + ", a unit of " + std::to_string(n) + " " +
                        std::string(dtype_name(t)) + " parameters (chunk " + std::to_string(chunk) + ")";
  const auto run = grade::run_graded(P, [&](Comm& c) {
    const int me = c.rank();
    std::vector<std::byte> unit(padded * es);
    for (std::size_t i = 0; i < padded; ++i) {
      const bool mine = i / chunk == std::size_t(me);
      store_element(unit.data(), i, t, mine ? unit_value(i) : std::numeric_limits<double>::quiet_NaN());
    }
    Request req = ex::all_gather_params(c, {unit.data(), t}, chunk);
    req.wait();
    std::vector<double> got(padded), want(padded);
    for (std::size_t i = 0; i < padded; ++i) {
      got[i] = element_as_double(unit.data(), i, t);
      want[i] = unit_value(i);
    }
    grade::expect_same(got, want, w + ", rank " + std::to_string(me) + "'s unit after waiting");
  });
  DTL_ASSERT_RAN(run, w);
  expect_one_collective(run, "all_gather", std::uint64_t(padded * es), w,
                        "in place: this rank's chunk in, the whole padded unit of " + std::to_string(P) + "·" +
                            std::to_string(chunk) + " elements out");
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
    } catch (const std::exception& e) {
      FAIL() << w << ": " << e.what();
    }
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
        << w << ": count " << got.count << ", expected " << s.end - s.begin << " (the real elements ["
        << s.begin << ", " << s.end << "); the chunk of " << chunk << " includes padding, which is never stepped)";
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
  DTL_GRADE_EXPECT(*got == want) << gather_case(order, position, depth, issued) << " is " << list(*got)
                                 << ", expected " << list(want) << " (" << why << ")";
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
        DTL_GRADE_ASSERT(s->begin == expect_begin && s->begin <= s->end && s->end <= n &&
                         s->end - s->begin <= s->chunk)
            << w << ": expected it to start at " << expect_begin
            << " (where the rank before it ended) and to end at most one chunk later, and at most at n = " << n;
        expect_begin = s->end;
      }
      DTL_GRADE_ASSERT(expect_begin == n) << range_case(n, world - 1, world) << ": the ranks cover [0, " << expect_begin
                                          << "), expected all of [0, " << n << ")";
    }
}

// ---- reduce_scatter_gradients ------------------------------------------------------------------

TEST(ReduceScatterGradients, EachRankGetsTheAverageOfItsChunk) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : {std::size_t(10), std::size_t(1003)}) check_reduce_scatter(P, n, DType::f32);
}

// Mixed precision: bf16 gradients are reduce-scattered in bf16. The inputs are small
// integers whose average is an integer, so even bf16 gives it exactly.
TEST(ReduceScatterGradients, Bf16GradientsAverageInBf16) {
  for (int P : kGradedWorldSizes) check_reduce_scatter(P, 1003, DType::bf16);
}

TEST(ReduceScatterGradients, ReturnsBeforeTheReduceScatterCompletes) {
  const int P = 4;
  const std::size_t chunk = 25;
  const std::string w = grade::on_ranks("reduce_scatter_gradients", P) + ", a unit of 100 floats";
  HoldBack hold;
  int still_inside = 0;
  std::vector<std::string> problems(P);
  const auto run = grade::run_graded(P, [&](Comm& c) {
    std::vector<float> unit(std::size_t(P) * chunk, 1.0f), shard(chunk);
    if (c.rank() == P - 1) still_inside = hold.still_inside(P - 1);
    Request req = hold.call(c.rank() < P - 1, [&] {
      return ex::reduce_scatter_gradients(c, {unit.data(), DType::f32}, shard.data(), chunk);
    });
    if (!req.valid())
      problems[std::size_t(c.rank())] = "returned an empty Request; return the one comm.ireduce_scatter gives";
    req.wait();
  });
  DTL_ASSERT_RAN(run, w);
  DTL_GRADE_EXPECT(still_inside == 0)
      << w << ": " << still_inside << " of ranks 0.." << P - 2 << " had not returned 1.5 s after calling, while rank "
      << P - 1 << " had not called yet: it waits for the reduce-scatter, which needs every rank; start it and return "
      << "its Request (backward goes on while it runs)";
  for (int r = 0; r < P; ++r)
    DTL_GRADE_EXPECT(problems[std::size_t(r)].empty()) << w << ", rank " << r << ": " << problems[std::size_t(r)];
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

// ---- all_gather_params -------------------------------------------------------------------------

TEST(AllGatherParams, EveryRankEndsWithTheWholeUnit) {
  for (int P : kGradedWorldSizes)
    for (std::size_t n : {std::size_t(10), std::size_t(1003)}) check_all_gather(P, n, DType::f32);
}

TEST(AllGatherParams, Bf16ParametersGatherBitForBit) {
  for (int P : kGradedWorldSizes) check_all_gather(P, 1003, DType::bf16);
}

TEST(AllGatherParams, ReturnsBeforeTheAllGatherCompletes) {
  const int P = 4;
  const std::size_t chunk = 25;
  const std::string w = grade::on_ranks("all_gather_params", P) + ", a unit of 100 floats";
  HoldBack hold;
  int still_inside = 0;
  std::vector<std::string> problems(P);
  const auto run = grade::run_graded(P, [&](Comm& c) {
    std::vector<float> unit(std::size_t(P) * chunk, float(c.rank()));
    if (c.rank() == P - 1) still_inside = hold.still_inside(P - 1);
    Request req =
        hold.call(c.rank() < P - 1, [&] { return ex::all_gather_params(c, {unit.data(), DType::f32}, chunk); });
    if (!req.valid())
      problems[std::size_t(c.rank())] = "returned an empty Request; return the one comm.iall_gather gives";
    req.wait();
  });
  DTL_ASSERT_RAN(run, w);
  DTL_GRADE_EXPECT(still_inside == 0)
      << w << ": " << still_inside << " of ranks 0.." << P - 2 << " had not returned 1.5 s after calling, while rank "
      << P - 1 << " had not called yet: it waits for the all-gather, which needs every rank; start it and return "
      << "its Request";
  for (int r = 0; r < P; ++r)
    DTL_GRADE_EXPECT(problems[std::size_t(r)].empty()) << w << ", rank " << r << ": " << problems[std::size_t(r)];
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
