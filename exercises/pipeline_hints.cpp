// The pipeline exercises' hints (exercises/pipeline.h), three levels each: what
// `dtlab grade --hint N` prints under a failing exercise. Prose only: name functions, indices
// and formulas, never a line of the solution (tests/grade/hints_test.cpp checks).
#include <array>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 3> kPipelineHints = {
    {{"one_f_one_b",
      {"GPipe runs every forward before any backward, so a stage holds the activations of all M micro-batches. "
       "1F1B starts each micro-batch's backward as early as the pipeline allows: after a short warm-up a stage "
       "alternates one forward and one backward, so it never holds more than P - stage micro-batches, whatever M "
       "is. The bubble stays the same as GPipe's, the memory does not grow with M.",
       "Warm-up: min(P - stage - 1, M) forwards, micro-batches 0, 1, ... Steady state: while forwards remain, one "
       "forward of the next micro-batch, then one backward of the oldest micro-batch not yet backwarded. Cool-down: "
       "the remaining backwards in order. Every action has chunk 0. The last stage has no warm-up: it alternates "
       "from the start.",
       "Outline: keep two counters, the next micro-batch to forward and the next to backward. Emit the warm-up "
       "forwards, then loop while the forward counter is below M emitting a forward then a backward, then emit "
       "backwards until that counter reaches M. The grader compares with tables written by hand for P = 4, M = 8 "
       "and checks that no stage ever holds more than P - stage micro-batches."}},
     {"run_stage",
      {"A stage computes in the schedule's order and talks only to its neighbours: activations go forward, their "
       "gradients come back. The danger is waiting on a send: in 1F1B a stage may be sending an activation on while "
       "its neighbour is sending a gradient back, and if both wait for their send to be received, neither ever "
       "receives. Post sends and move on, wait only for what you need to compute.",
       "For a forward of micro-batch m on chunk c: if has_previous(c), wait for recv_activation(m, c), call "
       "forward(m, c), if has_next(c), post send_activation(m, c) and keep its Request in sends. For a backward: if "
       "has_next(c), wait for recv_gradient(m, c), call backward(m, c), if has_previous(c), post send_gradient(m, "
       "c) into sends. A weight action only calls weight(m, c). An action marked with_next and the one after it are "
       "an overlapped pair: post both their receives and wait for both before computing either.",
       "Outline: one loop over the actions, a branch per op. Each receive is posted and waited right before the "
       "compute that needs it, each send is posted right after the compute that produced it and its request is "
       "appended, never waited. The lab waits for the sends after the step. The grader runs 1F1B, GPipe and "
       "interleaved schedules on 4 thread ranks with a watchdog and checks the data that arrives."}},
     {"split_backward",
      {"A backward computes two things: the gradient of the layer's input, which the stage before is waiting for, "
       "and the gradients of its weights, which nobody waits for until the optimizer step. Zero-bubble schedules "
       "run the first at once (B) and defer the second (W) to fill the time a stage would otherwise sit idle. The "
       "price is memory: W still needs the layer's saved inputs, so they are freed only after W.",
       "Copy the actions in order. After copying a B of micro-batch m and chunk c, remember a W of the same m and c "
       "in a queue. Then, while the queue holds more than lag W's, move the oldest one into the output. After the "
       "last action, move every W still in the queue, oldest first. F's and B's never move, and a W always comes "
       "after its own B.",
       "Outline: an output list and a first-in first-out queue of W actions. One loop over the input: push the "
       "action, and if it was a backward, enqueue its W and drain the queue down to lag entries. After the loop, "
       "drain the queue completely. With lag 0 every W follows its B at once, with lag s stage s holds s more "
       "micro-batches. The grader compares with hand-written ZB-H1 lists for 4 stages and 8 micro-batches, and "
       "checks the rules on interleaved and GPipe lists."}}}};

}  // namespace

std::span<const ExerciseHints> pipeline_hints() { return kPipelineHints; }

}  // namespace dtl::ex
