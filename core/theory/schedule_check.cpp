// check_schedule (core/theory/schedule.h): the rules any schedule — built in, or read from
// torch.distributed.pipelining's CSV — keeps before a lab runs it, each broken one named
// with the action's place and what to change. Dependencies between stages and deadlock
// freedom are the simulator's to find: a schedule it can finish with any action times is
// one the lab can run (the lab's runtime waits only on what an action needs).
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/theory/schedule.h"

namespace dtl::pipeline {

namespace {

std::string action_text(const Action& a) {
  return std::string(pass_letter(a.op)) + std::to_string(a.micro_batch) + "." + std::to_string(a.chunk);
}

// Where each (op, micro-batch, chunk) first appears on one stage.
using Positions = std::map<std::tuple<int, int, int>, std::size_t>;

void check_action(const Schedule& s, int st, std::size_t i, const ActionPlace& where, Positions& seen) {
  const std::vector<Action>& list = s.stages[std::size_t(st)];
  const Action& a = list[i];
  const auto fail = [&](const std::string& rule) {
    throw UsageError("pipeline schedule: " + where(st, i) + ": " + rule);
  };
  if (!is_action_pass(a.op)) fail("an action is F, B (I) or W");
  if (a.micro_batch < 0 || a.micro_batch >= s.config.micro_batches)
    fail("micro-batch " + std::to_string(a.micro_batch) + " is outside 0.." +
         std::to_string(s.config.micro_batches - 1) + " (M=" + std::to_string(s.config.micro_batches) + ")");
  if (a.chunk < 0 || a.chunk >= s.config.chunks)
    fail("chunk " + std::to_string(a.chunk) + " is outside the stage's " + std::to_string(s.config.chunks));
  if (!seen.emplace(std::tuple{int(a.op), a.micro_batch, a.chunk}, i).second)
    fail(action_text(a) + " appears twice on this stage; each runs once");
  const Pass before = a.op == Pass::backward ? Pass::forward : Pass::backward;
  if (a.op != Pass::forward && !seen.count({int(before), a.micro_batch, a.chunk}))
    fail(action_text(a) + " before its " + pass_letter(before) + "; a stage runs F, then B (or I), then W");
  if (a.with_next) {
    if (a.op != Pass::forward || i + 1 >= list.size() || list[i + 1].op != Pass::backward)
      fail("an overlapped pair is a forward and then a backward");
    if (list[i + 1].micro_batch == a.micro_batch && list[i + 1].chunk == a.chunk)
      fail("an overlapped pair runs two different micro-batch chunks; B of the pair's own F cannot run beside it");
  }
}

// A placement table puts each of the P·v virtual stages on exactly one (stage, chunk).
void check_placed(const Schedule& s) {
  if (s.placed.empty()) return;
  const int n = s.virtual_stages();
  if (int(s.placed.size()) != n)
    throw UsageError("pipeline schedule: the placement names " + std::to_string(s.placed.size()) +
                     " chunks; P·v = " + std::to_string(n));
  std::vector<int> where(std::size_t(n), -1);
  for (int i = 0; i < n; ++i) {
    const int vs = s.placed[std::size_t(i)];
    const std::string chunk =
        "chunk " + std::to_string(i % s.config.chunks) + " of stage " + std::to_string(i / s.config.chunks);
    if (vs < 0 || vs >= n)
      throw UsageError("pipeline schedule: the placement puts " + chunk + " at virtual stage " + std::to_string(vs) +
                       ", outside 0.." + std::to_string(n - 1));
    if (where[std::size_t(vs)] >= 0)
      throw UsageError("pipeline schedule: the placement puts " + chunk + " and chunk " +
                       std::to_string(where[std::size_t(vs)] % s.config.chunks) + " of stage " +
                       std::to_string(where[std::size_t(vs)] / s.config.chunks) + " both at virtual stage " +
                       std::to_string(vs) + "; each virtual stage is on one chunk");
    where[std::size_t(vs)] = i;
  }
}

}  // namespace

void check_schedule(const Schedule& s, const ActionPlace& where_given) {
  const ActionPlace where = where_given ? where_given : [](int stage, std::size_t index) {
    return "stage " + std::to_string(stage) + ", action #" + std::to_string(index);
  };
  const ScheduleConfig& c = s.config;
  if (c.stages < 1 || c.micro_batches < 1 || c.chunks < 1 || int(s.stages.size()) != c.stages)
    throw UsageError("pipeline schedule: needs P ≥ 1 stage lists, M ≥ 1 and v ≥ 1 (P=" + std::to_string(c.stages) +
                     ", " + std::to_string(s.stages.size()) + " lists, M=" + std::to_string(c.micro_batches) +
                     ", v=" + std::to_string(c.chunks) + ")");
  if (c.placement == Placement::vee && c.chunks != 2)
    throw UsageError("pipeline schedule: a V placement has 2 chunks per stage (v=" + std::to_string(c.chunks) + ")");
  check_placed(s);
  for (int st = 0; st < c.stages; ++st) {
    Positions seen;
    for (std::size_t i = 0; i < s.stages[std::size_t(st)].size(); ++i) check_action(s, st, i, where, seen);
    for (int m = 0; m < c.micro_batches; ++m)
      for (int ch = 0; ch < c.chunks; ++ch)
        if (!seen.count({int(Pass::backward), m, ch}))
          throw UsageError("pipeline schedule: stage " + std::to_string(st) + " never runs " +
                           (seen.count({int(Pass::forward), m, ch}) ? "B" : "F and B") + " of micro-batch " +
                           std::to_string(m) + " chunk " + std::to_string(ch) +
                           "; every stage runs each micro-batch on each of its chunks");
  }
  try {
    simulate(s, ActionTimes{});
  } catch (const ScheduleDeadlock& e) {
    throw UsageError(std::string(e.what()) + " (" + where(e.stage, e.index) + ")");
  }
}

}  // namespace dtl::pipeline
