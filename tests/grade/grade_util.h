// Shared machinery of the graded tests: run an exercise on N thread ranks with a
// watchdog, check every rank's buffer against a single-process reference, and read the
// communication pattern back from the trace events.
//
// `dtlab grade` shows a learner the first failure of each exercise, so every graded check
// says what a learner can act on: the exercise function, the case and what differs
// ("ring_all_reduce on 4 ranks, 1003 floats, rank 2: element 17 is 6, expected 10").
// Use DTL_GRADE_EXPECT / DTL_GRADE_ASSERT and expect_same, whose failure text is that
// message alone; the grader drops GoogleTest's framing (file:line, "Failed").
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/comm/threads_backend.h"
#include "core/trace/trace.h"

namespace dtl::grade {

inline const int kGradedWorldSizes[] = {2, 3, 4, 5, 8};
inline const std::size_t kGradedCounts[] = {1, 8, 40, 1003};  // 1003: chunks of uneven size

// What one rank did, read from its events after the exercise returned.
struct RankPattern {
  double bytes_sent = 0;
  int messages_sent = 0;
  std::set<int> sent_to;
  std::set<int> tags;
  std::vector<std::string> collectives;         // library collectives it called (by name)
  std::vector<std::uint64_t> collective_bytes;  // and the bytes each one's event records
};

struct GradedRun {
  std::string error;  // empty when every rank returned
  std::vector<RankPattern> ranks;
};

// Runs body on P ranks (5 s watchdog, so a deadlock fails instead of hanging) and collects
// each rank's pattern from events recorded inside `body`.
inline GradedRun run_graded(int P, const std::function<void(Comm&)>& body) {
  Trace trace(P);
  ThreadsOptions opt;
  opt.world_size = P;
  opt.trace = &trace;
  opt.timeout_s = 5;
  GradedRun g;
  std::vector<std::size_t> main_mark(static_cast<std::size_t>(P)), comm_mark(static_cast<std::size_t>(P));
  const RunResult r = run_threads(opt, [&](Comm& c) {
    const int me = c.global_rank();
    c.barrier();  // setup barrier: its events are before the marks
    main_mark[std::size_t(me)] = trace.log(me, kStreamMain).size();
    comm_mark[std::size_t(me)] = trace.log(me, kStreamComm).size();
    body(c);
  });
  g.error = r.error;
  g.ranks.resize(std::size_t(P));
  for (int q = 0; q < P; ++q) {
    RankPattern& p = g.ranks[std::size_t(q)];
    const EventLog& main = trace.log(q, kStreamMain);
    for (std::size_t i = main_mark[std::size_t(q)]; i < main.size(); ++i) {
      const Event& e = main[i];
      if (e.kind == EventKind::send) {
        p.bytes_sent += double(e.bytes);
        p.messages_sent += 1;
        p.sent_to.insert(e.peer);
      }
      if (e.kind == EventKind::send || e.kind == EventKind::recv) p.tags.insert(e.tag);
    }
    const EventLog& comm = trace.log(q, kStreamComm);
    for (std::size_t i = comm_mark[std::size_t(q)]; i < comm.size(); ++i)
      if (comm[i].kind == EventKind::collective) {
        p.collectives.push_back(trace.label_name(comm[i].label));
        p.collective_bytes.push_back(comm[i].bytes);
      }
  }
  return g;
}

// How graded messages name a case: "1 rank", "1003 floats",
// "ring_all_reduce on 4 ranks, 1003 floats".
// ⌈n / world⌉: the chunk each rank holds when n elements are split across the world.
inline std::size_t ceil_div(std::size_t n, std::size_t world) { return (n + world - 1) / world; }

inline std::string count_of(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}
inline std::string on_ranks(const std::string& function, int P) {
  return function + " on " + count_of(std::size_t(P), "rank");
}
inline std::string on_case(const std::string& function, int P, std::size_t n) {
  return on_ranks(function, P) + ", " + count_of(n, "float");
}

// A value as a learner reads it: 6, 0.5, 1e+30 (no trailing zeros).
inline std::string plain(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Empty when got equals want element by element, else where they part:
// "element 17 is 6, expected 10 (3 of 1003 elements differ, the largest by 4)".
inline std::string first_difference(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size())
    return "has " + count_of(got.size(), "element") + ", expected " + std::to_string(want.size());
  double worst = 0;
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(got[i] - want[i]);
    if (!(d == 0) && wrong++ == 0) first = i;  // NaN counts as different
    worst = std::max(worst, d);
  }
  if (wrong == 0) return {};
  std::string s = "element " + std::to_string(first) + " is " + plain(got[first]) + ", expected " + plain(want[first]);
  if (wrong > 1)
    s += " (" + std::to_string(wrong) + " of " + std::to_string(want.size()) + " elements differ, the largest by " +
         plain(worst) + ")";
  return s;
}

// Fails the current test (and goes on) when got differs from want, naming `where`.
inline void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& where) {
  const std::string d = first_difference(got, want);
  if (!d.empty()) ADD_FAILURE() << where << ": " << d;
}

}  // namespace dtl::grade

// DTL_GRADE_EXPECT(cond) << message: a graded check whose failure text is the message (the
// grader shows it as the exercise's first failure); DTL_GRADE_ASSERT also ends the test.
#define DTL_GRADE_EXPECT(cond)  \
  GTEST_AMBIGUOUS_ELSE_BLOCKER_ \
  if (cond) {                   \
  } else                        \
    ADD_FAILURE()
#define DTL_GRADE_ASSERT(cond)  \
  GTEST_AMBIGUOUS_ELSE_BLOCKER_ \
  if (cond) {                   \
  } else                        \
    FAIL()

// Fails the current test with the run's error (a stub's "not implemented yet", a deadlock
// report naming what each rank waits on, ...), prefixed with the case.
#define DTL_ASSERT_RAN(run, what) DTL_GRADE_ASSERT((run).error.empty()) << what << ": " << (run).error
