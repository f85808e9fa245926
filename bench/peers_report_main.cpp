// dtl-peers-report: the one table of bench/peers.sh (peers_report.h).
//
//   build/release/bench/dtl-peers-report build/peers [--plot-dir docs]
#include <cstring>
#include <iostream>

#include "bench/peers_report.h"

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && std::strcmp(argv[2], "--plot-dir") == 0)) {
    std::cerr << "usage: dtl-peers-report RESULTS_DIR [--plot-dir DIR]\n";
    return 2;
  }
  try {
    return dtl::peers::report(argv[1], argc == 4 ? argv[3] : "", std::cout);
  } catch (const std::exception& e) {
    std::cerr << "dtl-peers-report: " << e.what() << "\n";
    return 1;
  }
}
