// `dtlab run LAB --step`: the terminal side of the step gate (see step_through.h).
#include "labs/cli/step_through.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "core/trace/chunk_state.h"

namespace dtl::cli {

namespace {

// Draws the chunk picture after each transfer: a row per rank, a cell per chunk with
// how many ranks' contributions it holds ("4*" = complete).
void print_state(std::ostream& os, const ChunkState& s) {
  for (int r = 0; r < s.ranks(); ++r) {
    os << "    rank " << r << (r < 10 ? "  " : " ") << "|";
    for (int c = 0; c < s.chunks(); ++c) {
      const int n = s.count(r, c);
      char cell[16];
      std::snprintf(cell, sizeof cell, "%3d%c|", n, n == s.ranks() ? '*' : ' ');
      os << cell;
    }
    os << "\n";
  }
}

void print_transfer(std::ostream& os, int index, const Event& e) {
  os << "transfer " << index << ": rank " << e.peer << " -> rank " << e.rank << "  chunk";
  if (e.chunk_count > 1) os << "s " << e.chunk << ".." << (e.chunk + e.chunk_count - 1);
  else os << " " << e.chunk;
  os << "  " << e.bytes << " B  " << ((e.flags & kFlagReduce) ? "reduce" : "copy") << "  (step " << e.step
     << ", tag " << e.tag << ")\n";
}

}  // namespace

// The controller side of the step gate, in the terminal. Interactive: Enter advances one
// transfer, 'c' (or end of input) runs to the end quietly. Not a terminal: prints every step.
void step_through(StepGate& gate, Trace& trace, int chunks, std::ostream& os) {
  const bool interactive = isatty(STDIN_FILENO);
  ChunkState state(trace.world_size(), chunks);
  os << "Step-through: each cell is a chunk of a rank's buffer; the number says how many ranks'\n"
        "contributions it holds (* = all of them).\n";
  if (interactive) os << "Enter: next transfer · c: continue to the end without pictures\n";
  os << "initial state:\n";
  print_state(os, state);
  std::size_t applied = 0;
  bool quiet = false;
  LandingOrder landed;  // release order: a transfer released now may carry an earlier run time
  int run = -1;         // the lab's run the picture is of (its marks: core/trace/chunk_state.h)
  for (;;) {
    const StepGate::State st = gate.wait_quiet();
    const std::vector<Event> events = trace.snapshot();
    const std::vector<Event>& done = landed.update(events);
    const RunMarks marks = run_marks(events, trace.world_size(), [&](const Event& e) { return trace.label_role(e.label).part != RunPart::none; });
    for (; applied < done.size(); ++applied) {
      if (const int r = run_of(marks, done[applied]); r != run && r >= 0) {  // a new run starts from its own data
        run = r;
        state = ChunkState(trace.world_size(), chunks);
        if (!quiet) os << "run: " << trace.label_name(marks.by_rank[std::size_t(done[applied].rank)][std::size_t(r)]->label) << "\n";
      }
      state.apply(done[applied]);
      if (!quiet) {
        print_transfer(os, int(applied) + 1, done[applied]);
        print_state(os, state);
      }
    }
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
