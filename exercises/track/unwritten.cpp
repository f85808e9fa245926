#include "exercises/track/unwritten.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"

namespace dtl::ex {

namespace {

std::atomic<bool> run_references{false};
std::mutex used_mutex;
std::vector<std::string> used;  // guarded by used_mutex

}  // namespace

void run_references_for_unwritten_exercises() { run_references.store(true); }

void use_reference_for(const Unwritten& stub) {
  if (!run_references.load()) throw NotImplemented(stub.function, stub.exercise);
  const std::string function = stub.function, exercise = *stub.exercise ? stub.exercise : stub.function;
  const std::lock_guard lock(used_mutex);  // ranks are threads: say it once, not once per rank
  for (const std::string& name : used)
    if (name == function) return;
  used.push_back(function);
  // A lab's stub from the repository root on ("exercises/ddp.cpp"), as the learner knows it.
  const std::string file = stub.file;
  const std::size_t folder = file.rfind("/exercises/");
  std::fprintf(stderr, "note: using the reference for %s: not written yet (%s; dtlab grade --exercise %s)\n",
               function.c_str(), file.substr(folder == std::string::npos ? 0 : folder + 1).c_str(), exercise.c_str());
}

}  // namespace dtl::ex
