// The pipeline exercises' hints (exercises/pipeline.h), three levels each: what
// `dtlab grade --hint N` prints under a failing exercise. Prose only: name functions, indices
// and formulas, never a line of the solution (tests/grade/hints_test.cpp checks).
#include <array>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 5> kPipelineHints = {
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
       "checks the rules on interleaved and GPipe lists."}},
     {"vee_stage",
      {"Interleaving places chunk c of stage s at c times P plus s, so every chunk starts again at stage 0 and the "
       "model loops around the ranks. The V instead folds the model back: the first half runs down the stages, the "
       "second half comes back up them. Stage 0 then holds both ends of the model (the data and the loss on one "
       "rank), and the last stage hands its first chunk's output to its second chunk without a message.",
       "Chunk 0 of stage s holds virtual stage s: the first half in order. Chunk 1 holds the second half in reverse "
       "order of stages, so the last stage P - 1 holds the first virtual stage of the second half, P, and stage 0 "
       "holds the very last one, 2P - 1. Each step up the stages lowers chunk 1's virtual stage by one.",
       "Outline: one comparison on the chunk. For chunk 0 return the stage itself. For chunk 1 return 2P - 1 minus "
       "the stage. Check with P = 4: stage 0 holds 0 and 7, stage 3 holds 3 and 4, and the eight answers cover 0 to "
       "7 once each. The grader compares tables written by hand for 1 to 4 stages and checks the fold for up to 64."}},
     {"dualpipe_pairs",
      {"DualPipe runs a forward of one micro-batch beside a backward of another so that the messages of one hide "
       "behind the compute of the other. On the V the two chunks flow in opposite directions, so a forward of one "
       "chunk is paired with a backward of the other chunk. Which micro-batches: the next one of each, counting on "
       "from the warm-up.",
       "Keep four counters, the next forward and the next backward of each chunk, started where the warm-up left "
       "them: forwards of chunk 0 at 2P - s - 1, of chunk 1 at P, backwards of chunk 1 at P - s - 1, of chunk 0 at "
       "0. A pair is the forward marked with_next and the backward right after it. The exception is the last stage, "
       "whose first backward of chunk 1 waits for a gradient that travels the whole V first: its forward of chunk "
       "0 runs unpaired, before it.",
       "Outline: a main loop of M - 2P + s + 1 rounds, each the forward of chunk 0 with the backward of chunk 1, "
       "then the forward of chunk 1 with the backward of chunk 0, with_next set on both forwards except the very "
       "first round's first forward on stage P - 1. Then P - s - 1 rounds of a lone backward of chunk 1, then the "
       "forward of chunk 1 paired with the backward of chunk 0. Each pair's forward is P micro-batches ahead of its "
       "backward. The grader compares with lists written by hand for P = 2, M = 4 and P = 4, M = 8."}}}};

}  // namespace

std::span<const ExerciseHints> pipeline_hints() { return kPipelineHints; }

}  // namespace dtl::ex
