// What a rank waits for, in its lab's words, for the watchdog.
//
// When no rank makes progress, the watchdog prints what each one waits on ("still waiting: ...",
// then the --timeout message). A backend alone can only say "all_gather #3 (4096 B)" or
// "recv from rank 1 tag 4194306"; the lab knows it is "the gather of layer 3's parameters" or
// "the activation of micro-batch 5 from stage 1". Two ways for a lab to say so:
//   point-to-point     TransferInfo::what, per transfer (core/comm/comm.h)
//   library collective the typed Role the collective already carries (ScopedCollectiveRole:
//                      its kind, block, pass, MoE exchange), turned into words by a describer
//                      the lab installs for the rank's thread while it runs (ScopedWaitWords)
// The backend puts the lab's words first and its own after them, in parentheses.
#pragma once

#include <functional>
#include <string>

#include "core/trace/vocab.h"

namespace dtl {

// Words for a library collective of `role` ("for the gather of layer 3's parameters"), or ""
// when the lab has none for it (the backend's own description stands alone).
using CollectiveWords = std::function<std::string(const Role& role)>;

// While it lives, the library collectives this thread posts are described by `words`
// (each rank's thread installs its lab's; nested scopes restore the outer one).
class ScopedWaitWords {
 public:
  explicit ScopedWaitWords(CollectiveWords words);
  ~ScopedWaitWords();
  ScopedWaitWords(const ScopedWaitWords&) = delete;
  ScopedWaitWords& operator=(const ScopedWaitWords&) = delete;

 private:
  CollectiveWords saved_;
};

// The installed describer's words for a collective of `role` posted from this thread ("" without one).
std::string collective_wait_words(const Role& role);

// "for the gather of layer 3's parameters (all_gather #3, 4096 B)": the lab's words, then the
// backend's in parentheses; the backend's alone when the lab said nothing.
std::string with_wait_words(const std::string& lab_words, const std::string& backend_words);

}  // namespace dtl
