// Graded tests of ZeRO's two collectives (exercises/zero.h), beside grade_test.cpp
// (shard ranges, the shard step, the prefetch list): reduce_scatter_gradients and
// all_gather_params on thread ranks with inputs whose averages are exact (so results compare
// bit for bit), one collective of the whole padded unit read back from the trace, and each
// started and returned without waiting for it (HoldBack).
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
    grade::expect_same(got, want,
                       w + ", rank " + std::to_string(me) + "'s shard (elements " +
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

}  // namespace

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
    Request req = hold.call(c.rank() < P - 1, [&] {
      return ex::all_gather_params(c, {unit.data(), DType::f32}, chunk);
    });
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
