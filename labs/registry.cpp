// The lab registry: every lab the CLI, the visualizer and the tests can run.
#include "labs/collectives.h"
#include "labs/lab.h"

namespace dtl {

const std::vector<LabInfo>& lab_registry() {
  static const std::vector<LabInfo> labs = {
      {"collectives",
       "all-reduce from point-to-point: naive, ring, binomial tree, recursive halving-doubling, vs the formulas",
       {{"algo", "ring", "algorithm", {"naive", "ring", "tree", "rhd", "all"}},
        {"collective", "all_reduce", "which collective to build", {"all_reduce", "reduce_scatter", "all_gather", "broadcast"}},
        {"op", "sum", "reduction", {"sum", "avg", "max", "min"}}},
       run_collectives_lab,
       collectives_chunk_grid},
  };
  return labs;
}

}  // namespace dtl
