#include "core/comm/wait_words.h"

#include <utility>

namespace dtl {

namespace {
thread_local CollectiveWords t_words;  // ScopedWaitWords' describer for this thread
}  // namespace

ScopedWaitWords::ScopedWaitWords(CollectiveWords words) : saved_(std::move(t_words)) { t_words = std::move(words); }

ScopedWaitWords::~ScopedWaitWords() { t_words = std::move(saved_); }

std::string collective_wait_words(const Role& role) { return t_words ? t_words(role) : std::string(); }

std::string with_wait_words(const std::string& lab_words, const std::string& backend_words) {
  return lab_words.empty() ? backend_words : lab_words + " (" + backend_words + ")";
}

}  // namespace dtl
