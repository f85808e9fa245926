// The collectives lab (see labs/collectives.cpp).
#pragma once

#include "labs/lab.h"

namespace dtl {

Report run_collectives_lab(Comm& comm, const LabConfig& cfg);
int collectives_chunk_grid(const LabConfig& cfg);

}  // namespace dtl
