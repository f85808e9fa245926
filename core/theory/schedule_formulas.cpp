// The published bubble and activation bounds of every built-in schedule (core/theory/
// schedule.h), as closed forms the tests and the lab compare with the simulator and the run.
// Times are one stage's whole model: F forward, B the full backward, W its weight part
// (a chunk of v takes 1/v of each). Idle per stage, from the sources:
//   gpipe, 1f1b      (P−1)(F+B)                      Huang et al. 2019; Narayanan et al. 2021
//   interleaved      (P−1)(F+B)/v                    Narayanan et al. 2021
//   zb-h1            (P−1)(F+B−2W)                   Qi et al. 2023 (p−1)(T_F+T_B−T_W) with
//                                                    their T_B = B − W; DualPipe's "ZB1P" row
//   interleaved-zb   (P−1)(F+B−2W)/v                 zb-h1's over v chunks, as interleaving
//                                                    divides 1F1B's (dtlab's analogy, checked
//                                                    by the simulator, not a paper's row)
//   zb-h2, zb-v      (P−1)·max(0, F+B−3W)·(1/v)       Qi et al. (p−1)(T_F+T_B−2T_W): 0 when
//                                                    T_F = T_B = T_W, with post-validation
//                                                    (bubble_tiled); for M ≥ 2P − 1, below
//                                                    it zb-h1's (P−1)(F+B−2W) (dtlab's
//                                                    observation: the warm-up cannot fill;
//                                                    zb-v only at M = P, less between)
//   dualpipev        (P−1)(F&B + B − 3W) per chunk   DualPipe README, PP = 2P stages on P
//                    = (P−1)(F + 2B − 3W)/2          devices, F&B = F + B (one device runs
//                                                    both; the overlap hides communication)
// Share of the step: idle / (M(F+B) + idle), each stage computing M(F+B).
#include <algorithm>

#include "core/theory/schedule.h"

namespace dtl::pipeline {

int published_in_flight(ScheduleKind kind, const ScheduleConfig& c, int s) {
  const int P = c.stages, M = c.micro_batches, v = c.chunks;
  switch (kind) {
    case ScheduleKind::gpipe: return M;
    case ScheduleKind::one_f_one_b: return std::min(M, P - s);
    case ScheduleKind::interleaved: return std::min(M * v, 2 * (P - s - 1) + (v - 1) * P + 1);
    case ScheduleKind::zb_h1: return std::min(M, P);  // Qi et al.: 1F1B's peak on every stage
    case ScheduleKind::zb_h2:
      return std::min(M, 2 * P - 1);  // Qi et al.: (2p − 1)·M_B
    // Qi et al.: p·M_B, 2P chunks of half a stage; below M = 2P − 1 torch's padding leaves
    // stage s its M forwards of chunk 0 and s + 1 of chunk 1 (dtlab's count of that order).
    case ScheduleKind::zb_v: return std::min(2 * P, M + 1 + s);
    // zb-h1's lag over interleaving: stage s keeps s more until their W's.
    case ScheduleKind::interleaved_zb: return std::min(M * v, 2 * (P - s - 1) + (v - 1) * P + 1 + s);
    case ScheduleKind::dualpipe_v: return 2 * P + 1;  // DualPipe README: PP + 1 chunks, PP = 2P
    case ScheduleKind::csv: break;
  }
  return -1;  // a csv schedule has no published bound
}

PublishedBubble published_bubble(ScheduleKind kind, const ScheduleConfig& c, const ActionTimes& t) {
  const double P = c.stages, M = c.micro_batches, v = c.chunks;
  const double F = t.forward, B = t.backward, W = t.weight_part();
  PublishedBubble out;
  double idle = 0;
  switch (kind) {
    case ScheduleKind::gpipe:
    case ScheduleKind::one_f_one_b: idle = (P - 1) * (F + B), out.formula = "(P-1)(F+B)"; break;
    case ScheduleKind::interleaved: idle = (P - 1) * (F + B) / v, out.formula = "(P-1)(F+B)/v"; break;
    case ScheduleKind::zb_h1: idle = (P - 1) * (F + B - 2 * W), out.formula = "(P-1)(F+B-2W)"; break;
    case ScheduleKind::interleaved_zb: idle = (P - 1) * (F + B - 2 * W) / v, out.formula = "(P-1)(F+B-2W)/v"; break;
    case ScheduleKind::zb_h2:
    case ScheduleKind::zb_v:
      if (M < 2 * P - 1) {  // too few micro-batches to fill the warm-up: zb-h1's bubble
        idle = (P - 1) * (F + B - 2 * W), out.formula = "(P-1)(F+B-2W), M<2P-1";
        out.applies = kind == ScheduleKind::zb_h2 || M == P;  // zb-v between P and 2P-1: below it
        break;
      }
      idle = (P - 1) * std::max(0.0, F + B - 3 * W) / v;
      out.formula = kind == ScheduleKind::zb_h2 ? "(P-1)max(0,F+B-3W), tiled" : "(P-1)max(0,F+B-3W)/2, tiled";
      out.tiled = true;
      break;
    case ScheduleKind::dualpipe_v:
      idle = (P - 1) * (F + 2 * B - 3 * W) / 2, out.formula = "(PP/2-1)(F&B+B-3W), PP=2P, F&B=F+B";
      break;
    case ScheduleKind::csv: out.applies = false; break;
  }
  const double work = M * (F + B);
  out.idle_share = idle / (work + idle);
  return out;
}

}  // namespace dtl::pipeline
