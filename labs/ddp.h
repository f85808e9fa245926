// The DDP lab (see labs/ddp.cpp).
#pragma once

#include "labs/lab.h"

namespace dtl {

Report run_ddp_lab(Comm& comm, const LabConfig& cfg);

}  // namespace dtl
