#include "exercises/track/track.h"

namespace dtl::ex {

const char* track_name() { return "exercises"; }

}  // namespace dtl::ex
