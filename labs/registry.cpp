// The lab registry: every lab the CLI, `dtlab grade`, the visualizer and the tests can run.
// Adding a lab: its folder under labs/ (with a CMakeLists.txt naming its sources) and one
// line here.
#include "labs/collectives/collectives_lab.h"
#include "labs/ddp/ddp_lab.h"
#include "labs/gpt/gpt_lab.h"
#include "labs/lab.h"
#include "labs/pipeline/pipeline_lab.h"
#include "labs/tensor_parallel/tp_lab.h"
#include "labs/grid/grid_lab.h"
#include "labs/zero/zero_lab.h"

namespace dtl {

const std::vector<LabInfo>& lab_registry() {
  static const std::vector<LabInfo> labs = {
      collectives_lab_info(),
      ddp_lab_info(),
      zero_lab_info(),
      pipeline_lab_info(),
      gpt_lab_info(),
      tensor_parallel_lab_info(),
      grid_lab_info(),
  };
  return labs;
}

}  // namespace dtl
