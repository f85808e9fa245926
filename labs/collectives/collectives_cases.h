// The collectives lab's cases (collectives_cases.cpp): what collectives_lab.cpp runs, checks
// and times, one Case per algorithm of the collective --collective names.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "labs/collectives/collectives_lab.h"

namespace dtl {

// One algorithm of one collective, as the lab runs it.
struct Case {
  std::string name;  // "ring all_reduce": the trace's phase
  std::string id;    // "ring": the case of the report's rows
  theory::CommCost predicted;
  CollectiveFormulas formulas;
  CollectiveKind collective;
  AlgorithmKind algorithm;
  std::function<void(Comm&, ex::BufferView)> run;  // the algorithm under test
  std::function<void(ex::BufferView)> init;        // this rank's input
  std::function<double(std::size_t)> expected;     // element i afterwards (NaN: not checked)
  // Whether predicted.time_s is the α-β time of this run: on two tiers only for the rings (a
  // lock-step ring runs at its slowest link, the one between nodes) and the hierarchical form.
  bool time_predicted = true;
  int channels = 1;  // NCCL's channels the run splits the buffer over (--channels)
};

// What is wrong with the learner's double binary tree on P ranks (ex::double_binary_tree, both
// trees), in words; empty when each tree has one root and every other rank exactly one parent
// that lists it as a child (tree_check.cpp). The lab runs no double_tree on a wrong tree.
std::vector<std::string> double_tree_problems(int P);

// The cases of this run (--collective, --algo), for `count` elements per rank.
std::vector<Case> make_cases(Comm& comm, const LabConfig& cfg, const CollectivesSettings& s, std::size_t count);

}  // namespace dtl
