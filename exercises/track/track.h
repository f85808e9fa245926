// Which code the exercise API of this program was linked from: "solutions" (the reference
// track, solutions/*.cpp) or "exercises" (the learner's, exercises/*.cpp). Each
// track's library defines it (exercises/track_*.cpp), so a program says the track it runs.
#pragma once

namespace dtl::ex {

const char* track_name();

}  // namespace dtl::ex
