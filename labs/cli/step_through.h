// `dtlab run LAB --step`: the controller side of the step gate in the terminal, for every lab.
// A lab built from point-to-point messages steps by transfer: each is printed, with the
// chunk picture when the lab has a chunk grid (the collectives lab: a row per rank, a cell per
// chunk holding how many ranks' contributions it has; "4*" = complete; a picture per run,
// each starting from every rank holding its own data) and the pipeline as a text Gantt
// growing action by action. A lab built on library collectives (DDP, ZeRO, tensor parallel,
// the grid, the GPT) steps by collective: each is printed with its group and what it is for.
// After each step, each rank's memory by tag when it changed, and the lab's own pictures
// (step_pictures.h: ZeRO-3's shards, the experts' routing).
#pragma once

#include <ostream>

#include "core/trace/step_gate.h"
#include "core/trace/trace.h"

namespace dtl::cli {

struct StepSetup {
  StepUnit unit = StepUnit::transfers;
  int chunks = 0;  // the chunk grid drawn after each transfer (0: none)
  // Columns every printed line fits in (terminal_width(): the terminal's, else $COLUMNS):
  // text wraps at spaces, pictures are drawn to fit.
  std::size_t width = 100;
  // The lab's sizes for stepping that the command line did not set (LabInfo::live_options:
  // " --micro-batches 8 --compute-us 2000"), said first; empty: none.
  std::string sizes;
};

// Interactive (a terminal): Enter advances one step, 'c' (or end of input) runs to the end
// quietly. Not a terminal: prints every step. Returns when the run has finished.
void step_through(StepGate& gate, Trace& trace, const StepSetup& setup, std::ostream& os);

}  // namespace dtl::cli
