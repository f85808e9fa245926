// The experts exercises' hints (exercises/experts.h), three levels each: what `dtlab
// grade --hint N` prints under a failing exercise. Prose only, never a line of the solution.
#include <array>
#include <span>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 3> kExpertsHints = {{
    {"top_k_router",
     {"A mixture-of-experts layer sends each token to only k of its E experts. The router scores every expert "
      "with a logit, turns a token's E logits into probabilities with a softmax, and picks the k most likely. "
      "An expert can only take so many tokens per step (its capacity), and the choices beyond it are dropped and "
      "the token keeps only its residual path.",
      "Softmax of a row: subtract the row's largest logit before exponentiating, then divide by the sum. The "
      "choices of token t fill slots t·k .. t·k + k − 1 in descending probability, a tie going to the lower "
      "expert index, and each slot's weight is that probability, and probs keeps all T·E values. Capacity: count "
      "the slots each expert has taken, visit slot j of every token (tokens in order) for j = 0, then j = 1, "
      "and keep a slot only while its expert's count is below the capacity.",
      "Outline: for each token, compute its probabilities into its row of probs, order the expert indices by "
      "probability with a stable sort, and append the first k. For kept_slots, start a zeroed flag per slot "
      "and a zeroed counter per expert, loop choices in the outer loop and tokens in the inner loop, and set "
      "a flag and bump the counter when there is room. The grader compares with a float64 softmax and with "
      "counts worked by hand."}},
    {"dispatch_layout",
     {"Under expert parallelism the E experts are spread over the ranks, E/EP on each, and a token's row must "
      "travel to the rank that holds its expert: one variable all-to-all (all_to_allv) per step. Its layout "
      "says how many rows go to each rank and where each rank's rows start in the send buffer, and the "
      "permutation says which token's row sits at each position.",
      "Expert e lives on rank e / (E/EP). Skip the slots that were not kept (count them as dropped). Order the "
      "kept slots by destination rank, then expert, then token. Since a rank's experts are consecutive, a "
      "stable ordering by expert gives exactly that. tokens_to_rank[q] counts the kept slots bound for q, "
      "tokens_per_expert[e] those of expert e, and first_row_of_rank is the exclusive prefix sum of "
      "tokens_to_rank.",
      "Outline: reject a rank count that does not divide the experts with a UsageError. Walk the slots once to "
      "fill the counters, the dropped count and the list of kept slots in slot order, stable-sort that list "
      "by each slot's expert, then fill first_row_of_rank with running sums. The grader checks the counts "
      "against brute force and sends rows with your layout over thread ranks."}},
    {"combine",
     {"After the experts ran, the reverse all-to-all brings each expert's output row back to the rank that "
      "owns the token, in the order the rows were sent. The combine undoes the permutation and mixes the k "
      "outputs of a token with the router's weights. Its backward splits the output gradient the same way "
      "and gives the router its gradient through the weights.",
      "Row i of back belongs to slot send_order[i], whose token is that slot divided by k (integer division) "
      "and whose weight is weight[slot]. Forward: out[token] += weight · back[i]. Backward: d_back[i] = "
      "weight · dout[token], and d_weight[slot] is the dot product of back[i] and dout[token].",
      "Outline: one loop over the sent rows. Look up the slot, its token and its weight, then an inner loop "
      "over the hidden elements that accumulates into the output row (forward), or writes the scaled gradient "
      "row and sums the dot product (backward, best in double). Leave out's other contents alone. The grader "
      "compares with sums written by hand and with finite differences."}},
}};

}  // namespace

std::span<const ExerciseHints> experts_hints() { return kExpertsHints; }

}  // namespace dtl::ex
