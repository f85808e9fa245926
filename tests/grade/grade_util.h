// Shared machinery of the graded tests: run an exercise on N thread ranks with a
// watchdog, check every rank's buffer against a single-process reference, and read the
// communication pattern back from the trace events.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
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
  std::vector<std::string> collectives;  // library collectives it called (by name)
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
      if (comm[i].kind == EventKind::collective) p.collectives.push_back(trace.label_name(comm[i].label));
  }
  return g;
}

// Element-wise comparison with the largest difference in the message.
inline ::testing::AssertionResult same_values(const std::vector<double>& got, const std::vector<double>& want,
                                              const std::string& where) {
  double worst = 0;
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(got[i] - want[i]);
    if (d != 0 && wrong++ == 0) first = i;
    worst = std::max(worst, d);
  }
  if (wrong == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << where << ": " << wrong << " of " << want.size()
                                       << " elements differ from the reference; first at index " << first << " (got "
                                       << got[first] << ", want " << want[first] << "), largest difference " << worst;
}

}  // namespace dtl::grade

// Fails the current test with the run's error (a stub's hint, a deadlock report, ...).
#define DTL_ASSERT_RAN(run, what) ASSERT_TRUE((run).error.empty()) << what << ": " << (run).error
