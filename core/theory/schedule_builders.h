// The per-stage list builders behind make_schedule (core/theory/schedule.h), shared by
// schedule.cpp (gpipe, 1f1b, interleaved, zb-h1) and schedule_zero_bubble.cpp (zb-h2, zb-v,
// interleaved-zb, dualpipev). Internal to core/theory.
#pragma once

#include <vector>

#include "core/theory/schedule.h"

namespace dtl::pipeline::detail {

std::vector<Action> interleaved_stage(int P, int M, int v, int s);
// The list with every B split into B (input gradient) and W (weight gradient): after each
// B, the oldest pending W's run until no more than `lag` wait; the rest run at the end.
// lag = s on stage s of 1F1B's order is zb-h1 (Qi et al. 2023 §2.1).
std::vector<Action> split_backward(const std::vector<Action>& list, int lag);

std::vector<Action> zb_h2_stage(int P, int M, int s);
std::vector<Action> zb_v_stage(int P, int M, int s);
std::vector<Action> interleaved_zb_stage(int P, int M, int v, int s);
std::vector<Action> dualpipe_v_stage(int P, int M, int s);

}  // namespace dtl::pipeline::detail
