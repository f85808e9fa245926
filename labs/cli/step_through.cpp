// `dtlab run LAB --step`: the terminal side of the step gate (see step_through.h).
#include "labs/cli/step_through.h"

#include <unistd.h>

#include <iostream>
#include <optional>
#include <string>

#include "core/trace/chunk_state.h"
#include "core/trace/steps.h"
#include "labs/cli/step_printers.h"

namespace dtl::cli {

namespace {

// Everything printed so far, and what prints the next steps.
class StepPrinter {
 public:
  StepPrinter(const Trace& trace, const StepSetup& setup, std::ostream& os) : trace_(trace), setup_(setup), os_(os) {
    if (setup.chunks > 0) state_.emplace(trace.world_size(), setup.chunks);
  }
  // Prints what landed since the last call (quiet: only keeps count).
  void print_new(bool quiet) {
    const std::vector<Event> events = trace_.snapshot();
    const bool any = setup_.unit == StepUnit::transfers ? transfers(events, quiet) : collectives(events, quiet);
    if (quiet || !any) return;
    gantt_.print_if_grown(os_, events, trace_.world_size(), trace_);
    memory_.print_if_changed(os_, events, trace_.world_size());
  }

 private:
  bool transfers(const std::vector<Event>& events, bool quiet) {
    const std::vector<Event>& done = landed_.update(events);
    const RunMarks marks = run_marks(events, trace_.world_size(),
                                     [&](const Event& e) { return trace_.label_role(e.label).part != RunPart::none; });
    const bool any = shown_ < done.size();
    for (; shown_ < done.size(); ++shown_) {
      const Event& e = done[shown_];
      if (const int r = run_of(marks, e); state_ && r != run_ && r >= 0) {  // a new run starts from its own data
        run_ = r;
        state_.emplace(trace_.world_size(), setup_.chunks);
        if (!quiet)
          os_ << "run: " << trace_.label_name(marks.by_rank[std::size_t(e.rank)][std::size_t(r)]->label) << "\n";
      }
      if (state_) state_->apply(e);
      if (quiet) continue;
      print_transfer(os_, shown_ + 1, e);
      if (state_) print_chunks(os_, *state_);
    }
    return any;
  }
  bool collectives(const std::vector<Event>& events, bool quiet) {
    const std::vector<Event> done =  // (as the viewer: none of the 1-rank reference's)
        collective_steps(events, [&](const Event& e) { return trace_.label_role(e.label).part == RunPart::reference; });
    const bool any = shown_ < done.size();
    for (; shown_ < done.size(); ++shown_)
      if (!quiet) print_collective(os_, shown_ + 1, done[shown_], trace_);
    return any;
  }

  const Trace& trace_;
  StepSetup setup_;
  std::ostream& os_;
  std::size_t shown_ = 0;
  LandingOrder landed_;  // release order: a transfer released now may carry an earlier run time
  std::optional<ChunkState> state_;
  int run_ = -1;  // the lab's run the chunk picture is of
  TextGantt gantt_;
  MemoryLines memory_;
};

}  // namespace

// Interactive: Enter advances one step, 'c' (or end of input) runs to the end without
// printing. Not a terminal: prints every step.
void step_through(StepGate& gate, Trace& trace, const StepSetup& setup, std::ostream& os) {
  const bool interactive = isatty(STDIN_FILENO);
  const char* unit = step_unit_noun(setup.unit);
  os << "Step-through: one " << unit << " at a time";
  if (setup.chunks > 0)
    os << "; each cell is a chunk of a rank's buffer, the number how many ranks'\ncontributions it holds (* = all of "
          "them)";
  os << ".\n";
  if (interactive) os << "Enter: next " << unit << " · c: continue to the end without printing\n";
  if (setup.chunks > 0) {
    os << "initial state:\n";
    print_chunks(os, ChunkState(trace.world_size(), setup.chunks));
  }
  StepPrinter printer(trace, setup, os);
  bool quiet = false;
  for (;;) {
    const StepGate::State st = gate.wait_quiet();
    printer.print_new(quiet);
    if (st != StepGate::State::transfer_waiting) break;
    if (interactive && !quiet) {
      std::string line;
      if (!std::getline(std::cin, line) || line == "c") {
        quiet = true;
        gate.release_all();
        continue;
      }
    }
    gate.release_one();
  }
}

}  // namespace dtl::cli
