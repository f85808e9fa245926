// The grid lab's memory per rank, by tag, against the planner's memory model — the same
// functions `dtlab plan` uses (core/theory/plan.h: rank_model_state, activations_in_flight).
//
// The planner counts a transformer given by its shape, Ψ/(tp·pp) per GPU; the lab's models are
// mapped onto it explicitly:
//   Ψ_rank        the parameters one rank holds: its stage's blocks (L/P each, the first L mod P
//                 one more), MLP 8h²/T + 4h/T + h each (c_fc's weight and bias and c_proj's
//                 weight split over tp, c_proj's bias on every tp rank); GPT 12h²/T + 7h/T + 6h
//                 each, + wte (V/T rows) and wpe on the first stage, + ln_f and the head's copy
//                 of the tied wte on the last — the planner's 12·L·h² + V·h + s·h with the biases
//                 and layer norms, split as the stages hold it
//   precision     fp32: 4 + 4 + 8 bytes per parameter (AdamW's m and v, no master copy)
//   activations   per layer and micro-batch the model's own count — MLP 4·(R·h + 2·R·4h/T) (its
//                 input, c_fc's output before and after GELU), GPT gpt_activation_bytes' block
//                 (labs/train/gpt.h) — instead of Korthikanti's 16-bit formula; the planner's
//                 ⌈L/P⌉ layers × min(M, P) in flight is 1F1B's first stage, so activations are
//                 compared on rank 0 under 1F1B
// What the lab holds and the planner does not count is named in each row and added to the
// prediction: ZeRO-1's reduce-scatter output (a gradient shard) and rank 0's output to the next
// stage per micro-batch in flight (with P = 1: the head's activations).
#pragma once

#include "labs/grid/grid_lab.h"

namespace dtl {

// Ψ_rank of world rank `rank` (rank = pp·(D·T) + dp·T + tp).
double grid_rank_params(const GridSettings& s, int rank);

// Rows "planner.*": rank 0's parameters, gradients, optimizer state and activations (peaks by
// tag) vs the planner, each a check, and the worst rank and part of the model state.
void add_planner_memory_rows(Report& rep, const GridSettings& s, const GridMeasurement& m);

}  // namespace dtl
