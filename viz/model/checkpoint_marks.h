// The checkpoint marks the timeline draws over its lanes, from the events the labs record
// (labs/train/checkpoint_run.cpp; their roles' checkpoint parts, core/trace/vocab.h): where
// training stopped for a save, where a rank's file was written (beside the next step when the save
// is asynchronous), and where a resumed run read its checkpoint before its first step.
#pragma once

#include <cstdint>
#include <vector>

#include "viz/model/trace_data.h"

namespace dtl::viz {

enum class CheckpointMarkKind { save, write, resume };

struct CheckpointMark {
  CheckpointMarkKind kind = CheckpointMarkKind::save;
  std::int64_t begin_ns = 0, end_ns = 0;
  int step = -1;            // the checkpoint's: saved after it, or resumed from it
  std::uint32_t event = 0;  // the span's index in the trace's events
  // A write: the time it ran beside training, outside every save span of its rank (the overlap
  // an asynchronous save buys; 0 for a synchronous one, written inside its save).
  std::int64_t beside_training_ns = 0;
};

// Rank 0's checkpoint spans (every rank saves at the same steps; the lanes show the others), by
// begin. Phase spans only: the marks their begins also record are not repeated.
std::vector<CheckpointMark> checkpoint_marks(const TraceData& d);

}  // namespace dtl::viz
