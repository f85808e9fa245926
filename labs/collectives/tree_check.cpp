// The double binary tree the learner built (exercise 8, ex::double_binary_tree), checked as a
// tree before the lab runs on it (collectives_cases.h): a wrong tree would not just give a
// wrong sum, its ranks would wait for messages nobody sends. Every rank computes the same
// links, so each checks all of them itself, without a message.
#include <string>
#include <vector>

#include "exercises/collectives.h"
#include "labs/collectives/collectives_cases.h"

namespace dtl {

namespace {

// The problems of tree t over P ranks, given every rank's links.
void check_one_tree(int P, int t, const std::vector<theory::TreeLinks>& links, std::vector<std::string>& problems) {
  const std::string in = " in tree " + std::to_string(t) + " of " + std::to_string(P) + " ranks";
  auto valid = [P](int q) { return q >= 0 && q < P; };
  std::vector<int> listed_by(std::size_t(P), 0);  // how many ranks list each rank as their child
  int roots = 0;
  for (int r = 0; r < P; ++r) {
    const theory::TreeLinks& l = links[std::size_t(r)];
    if (l.parent < 0) ++roots;
    if (l.parent >= P || l.parent == r)
      problems.push_back("rank " + std::to_string(r) + " names parent " + std::to_string(l.parent) + in);
    for (const int c : l.children) {
      if (c < 0) continue;
      if (!valid(c) || c == r) {
        problems.push_back("rank " + std::to_string(r) + " names child " + std::to_string(c) + in);
        continue;
      }
      ++listed_by[std::size_t(c)];
      if (links[std::size_t(c)].parent != r)
        problems.push_back("rank " + std::to_string(r) + " lists child " + std::to_string(c) + ", whose parent is " +
                           std::to_string(links[std::size_t(c)].parent) + in);
    }
  }
  for (int r = 0; r < P; ++r) {
    const int p = links[std::size_t(r)].parent;
    if (listed_by[std::size_t(r)] > 1)
      problems.push_back("rank " + std::to_string(r) + " has " + std::to_string(listed_by[std::size_t(r)]) +
                         " parents" + in);
    if (valid(p) && listed_by[std::size_t(r)] == 0)
      problems.push_back("rank " + std::to_string(r) + " is missing: its parent " + std::to_string(p) +
                         " does not list it as a child" + in);
  }
  if (roots != 1) problems.push_back(std::to_string(roots) + " roots" + in + ", expected 1");
}

}  // namespace

std::vector<std::string> double_tree_problems(int P) {
  std::vector<std::string> problems;
  for (int t = 0; t < 2; ++t) {
    std::vector<theory::TreeLinks> links;
    for (int r = 0; r < P; ++r) links.push_back(ex::double_binary_tree(P, r, t));
    check_one_tree(P, t, links, problems);
  }
  return problems;
}

}  // namespace dtl
