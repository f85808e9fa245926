// `dtlab run LAB --step`: the controller side of the step gate in the terminal. After each
// transfer it prints the transfer and the chunk picture (a row per rank, a cell per chunk
// holding how many ranks' contributions it has; "4*" = complete). A lab that marks its runs
// (the collectives lab: one per algorithm, repetition and check) gets a picture per run,
// each starting from every rank holding its own data, under the run's name.
#pragma once

#include <ostream>

#include "core/trace/step_gate.h"
#include "core/trace/trace.h"

namespace dtl::cli {

// Interactive (a terminal): Enter advances one transfer, 'c' (or end of input) runs to the
// end quietly. Not a terminal: prints every step. Returns when the run has finished.
void step_through(StepGate& gate, Trace& trace, int chunks, std::ostream& os);

}  // namespace dtl::cli
