// The lab registry: every lab the CLI, `dtlab grade`, the visualizer and the tests can run.
// Adding a lab: its folder under labs/ (with a CMakeLists.txt naming its sources) and its
// line here (docs/reference.md, "Adding a lab"). A binary may register more (register_lab).
#include "core/error.h"
#include "labs/collectives/collectives_lab.h"
#include "labs/context_parallel/cp_lab.h"
#include "labs/ddp/ddp_lab.h"
#include "labs/experts/experts_lab.h"
#include "labs/gpt/gpt_lab.h"
#include "labs/grid/grid_lab.h"
#include "labs/lab.h"
#include "labs/pipeline/pipeline_lab.h"
#include "labs/tensor_parallel/tp_lab.h"
#include "labs/zero/zero_lab.h"

namespace dtl {

namespace {

struct Added {
  std::vector<LabInfo (*)()> labs;
  bool read = false;  // the registry was built: too late to add
};
Added& added() {
  static Added a;
  return a;
}

}  // namespace

void register_lab(LabInfo (*info)()) {
  if (added().read)
    throw Error("register_lab after the lab registry was first read: register from a static initializer");
  added().labs.push_back(info);
}

const std::vector<LabInfo>& lab_registry() {
  static const std::vector<LabInfo> labs = [] {
    std::vector<LabInfo> all = {
        collectives_lab_info(),     ddp_lab_info(),  zero_lab_info(),    pipeline_lab_info(),         gpt_lab_info(),
        tensor_parallel_lab_info(), grid_lab_info(), experts_lab_info(), context_parallel_lab_info(),
    };
    added().read = true;
    for (LabInfo (*info)() : added().labs) all.push_back(info());
    return all;
  }();
  return labs;
}

}  // namespace dtl
