// `dtlab run LAB --step`: the terminal side of the step gate (see step_through.h).
#include "labs/cli/step_through.h"

#include <unistd.h>

#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "core/trace/chunk_state.h"
#include "core/trace/steps.h"
#include "labs/cli/step_pictures.h"
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
    const int P = trace_.world_size();
    gantt_.print_if_grown(text_, events, P, trace_, setup_.width);
    memory_.print_if_changed(text_, events, P);
    shards_.print_if_changed(text_, events, P, trace_, setup_.width);
    routing_.print_if_new(text_, trace_, setup_.width);
    flush();
  }

 private:
  // Every line through print_wrapped: text wraps at spaces to the width, pictures already fit.
  void flush() {
    std::istringstream in(text_.str());
    for (std::string line; std::getline(in, line);) print_wrapped(os_, line, setup_.width);
    text_.str({});
  }
  bool transfers(const std::vector<Event>& events, bool quiet) {
    const std::vector<Event>& done = landed_.update(events);
    const RunMarks marks = run_marks(events, trace_.world_size(),
                                     [&](const Event& e) {  // (a checkpoint's spans are inside a run)
                                       const RunPart p = trace_.label_role(e.label).part;
                                       return p != RunPart::none && !is_checkpoint_part(p);
                                     });
    const bool any = shown_ < done.size();
    for (; shown_ < done.size(); ++shown_) {
      const Event& e = done[shown_];
      if (const int r = run_of(marks, e); state_ && r != run_ && r >= 0) {  // a new run starts from its own data
        run_ = r;
        state_.emplace(trace_.world_size(), setup_.chunks);
        if (!quiet)
          text_ << "run: " << trace_.label_name(marks.by_rank[std::size_t(e.rank)][std::size_t(r)]->label) << "\n";
      }
      if (state_) state_->apply(e);
      if (quiet) continue;
      print_transfer(text_, shown_ + 1, e);
      if (state_) print_chunks(text_, *state_, setup_.width);
    }
    flush();
    return any;
  }
  bool collectives(const std::vector<Event>& events, bool quiet) {
    const std::vector<Event> done =  // (as the viewer: none of the 1-rank reference's)
        collective_steps(events, [&](const Event& e) { return trace_.label_role(e.label).part == RunPart::reference; });
    const bool any = shown_ < done.size();
    for (; shown_ < done.size(); ++shown_)
      if (!quiet) print_collective(text_, shown_ + 1, done[shown_], trace_);
    flush();
    return any;
  }

  const Trace& trace_;
  StepSetup setup_;
  std::ostream& os_;
  std::ostringstream text_;  // this step's lines, before print_wrapped
  std::size_t shown_ = 0;
  LandingOrder landed_;  // release order: a transfer released now may carry an earlier run time
  std::optional<ChunkState> state_;
  int run_ = -1;  // the lab's run the chunk picture is of
  TextGantt gantt_;
  MemoryLines memory_;
  ShardPicture shards_;
  RoutingPicture routing_;
};

}  // namespace

// Interactive: Enter advances one step, 'c' (or end of input) runs to the end without
// printing. Not a terminal: prints every step.
void step_through(StepGate& gate, Trace& trace, const StepSetup& setup, std::ostream& os) {
  const bool interactive = isatty(STDIN_FILENO);
  const char* unit = step_unit_noun(setup.unit);
  std::string intro = std::string("Step-through: one ") + unit + " at a time";
  if (setup.chunks > 0)
    intro +=
        "; each cell is a chunk of a rank's buffer, the number how many ranks' contributions it holds (* = all "
        "of them)";
  print_wrapped(os, intro + ".", setup.width);
  if (!setup.sizes.empty())
    print_wrapped(os,
                  "A run sized to step through:" + setup.sizes +
                      " (the lab's sizes for stepping; give an option "
                      "to change one).",
                  setup.width);
  if (interactive)
    print_wrapped(os, std::string("Enter: next ") + unit + " · c: continue to the end without printing", setup.width);
  if (setup.chunks > 0) {
    os << "initial state:\n";
    print_chunks(os, ChunkState(trace.world_size(), setup.chunks), setup.width);
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
