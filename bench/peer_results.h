// What bench/peers.sh leaves in its results folder, read back for the report:
//   ar-LABEL-pP-rK.json     one all-reduce sweep (rows: bytes, time_us, busbw_GBps) of
//                           implementation LABEL on P ranks, repeat K; dtlab's also carry
//                           the memory bandwidth its ceiling came from
//   fit-BACKEND-ALGO-pP.json a dtlab sweep of one point-to-point algorithm, for the α–β fit
//                           (its in-place rows; every other file's out-of-place rows)
//   p2p-BACKEND-pP-rK.json  a dtlab bench ping_pong sweep (rows: bytes, time_us one way), for
//                           the point-to-point α–β fit
//   ddp-LABEL-pP.json       a DDP step: dtlab's report (bucketed.step_time) or torch_ddp.py's
//   ddpscale-LINK-pP.json   dtlab's DDP lab on thread ranks on an emulated link (or none),
//                           for the step time vs ranks and link
//   trace-on|off-pP-rK.json the same sweep with tracing on and off
//   skipped.txt             "peer: why" for every peer that did not run
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dtl::peers {

struct Stats {
  double median = 0, min = 0, max = 0;
  int n = 0;
};
Stats stats_of(std::vector<double> v);  // n = 0 when v is empty

// One implementation on P ranks: per size (bytes), busbw and time of each repeat, in
// repeat order, so repeat k of two implementations ran side by side.
struct Sweep {
  std::map<double, std::vector<double>> busbw_GBps, time_s;
  double memory_GBps = 0;                     // the best memory bandwidth any repeat measured (dtlab only)
  double ceiling_min_bytes = 0;               // below this the memory ceiling does not apply
  double link_latency_us = 0, link_GBps = 0;  // the emulated link the sweep ran on (0: none)
};

// One run of the DDP lab for the scaling chart: its step, the 1-rank step it measured on
// the global batch, the gradient bytes each rank all-reduces, and the link it ran on.
struct DdpPoint {
  Stats step_s, one_rank_s;
  double grad_bytes = 0;
  std::string link_name;                      // "" when no link was emulated
  double link_latency_us = 0, link_GBps = 0;  // 0: none
};

struct Results {
  std::map<std::string, std::map<int, Sweep>> all_reduce;      // label → P → sweep
  std::map<std::string, std::map<int, Sweep>> fit;             // "threads-ring" → P → sweep
  std::map<std::string, std::map<int, Stats>> ddp;             // label → P → step seconds over runs
  std::map<std::string, std::map<int, Sweep>> trace;           // "on"/"off" → P → sweep
  std::map<std::string, std::map<int, Sweep>> p2p;             // "threads" → P → ping-pong sweep
  std::map<std::string, std::map<int, DdpPoint>> ddp_scaling;  // link label → P → run
  std::vector<std::string> skipped;
};

// Reads every file of the layout above under `dir`; throws dtl::Error on a malformed one.
Results load_results(const std::string& dir);

std::string bytes_label(double bytes);  // 1K, 64K, 4M, 256M

}  // namespace dtl::peers
