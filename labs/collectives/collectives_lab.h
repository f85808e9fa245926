// The collectives lab (see labs/collectives/collectives_lab.cpp).
#pragma once

#include "labs/lab.h"

namespace dtl {

// --algo and --collective, in the order the LabInfo lists their names. The single
// algorithms are theory::Algo's values, in the same order.
enum class AlgoChoice { naive, ring, tree, rhd, all };
enum class CollectiveChoice { all_reduce, reduce_scatter, all_gather, broadcast };
// --op names sum, avg, max, min: ReduceOp's order.

Report run_collectives_lab(Comm& comm, const LabConfig& cfg);
int collectives_chunk_grid(const LabConfig& cfg);
LabInfo collectives_lab_info();

}  // namespace dtl
