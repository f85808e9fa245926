// torch.distributed.pipelining's schedule CSV, both ways (pure text; the lab reads the file).
//
// The format (torch/distributed/pipelining/schedules.py: _Action.from_str and __repr__,
// PipelineScheduleMulti._load_csv / _dump_csv, "compute_only"), read against pytorch main
// at 00722e6; OVERLAP_F_B came with pytorch#161072 (the 2.10 release notes). Older releases
// wrote the input gradient as B: such a file reads as full backwards, refused beside a W.
//   one row per rank, its actions in order, one per cell; an empty cell is an idle step
//   <stage><type><micro-batch>     stage: the virtual stage index (row = the rank that holds it)
//      type F forward, I input gradient (needs a W later), W weight gradient, B full backward
//   (<F action>;<B or I action>)OVERLAP_F_B    a forward and a backward run together
//   SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD, REDUCE_GRAD cells (the communication
//   form) are accepted and skipped: dtlab derives its messages from the placement.
// The placement is read from which row holds each stage: stage k on row k mod P (loop,
// v = stages / P chunks) or on row k for k < P and 2P − 1 − k above (V, 2 chunks).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/theory/schedule.h"

namespace dtl::pipeline {

// A schedule read from CSV text and where each of its actions came from (for messages).
struct CsvSchedule {
  Schedule schedule;                           // kind csv
  std::vector<std::vector<int>> cell;          // cell[stage][action]: its cell, from 1
  std::vector<std::vector<std::string>> text;  // the cell's text
  // "row 3 (rank 2), cell 5 \"2I0\"": check_schedule's ActionPlace for this file.
  std::string place(int stage, std::size_t action) const;
};

// Reads and checks (check_schedule): throws UsageError naming the row, the cell and the rule.
CsvSchedule read_torch_csv(std::string_view text);
// Writes `s` in the compute-only format: no empty cells, I where the stage also runs the W.
std::string write_torch_csv(const Schedule& s);

}  // namespace dtl::pipeline
