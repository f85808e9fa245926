#!/usr/bin/env bash
# How far `dtlab simulate` is from the grid lab measured on this machine (docs/planning.md, "Simulating
# a cluster"): 7 grid shapes (2 and 4 thread ranks), each calibrated N times, for each source
# of the simulator's compute (labs/cli/simulate_calibrate.h):
#   unlinked-run   compute and host work from runs of the same shape without the link: a prediction
#   same-run       from the measured run itself: the communication, waits and schedule predicted
#   flop-rate      one FLOP rate from a 1-rank run, the model before (for comparison)
# and once more with the grid lab's emulated compute (--compute-us 3000) from an unlinked run.
# Every table prints the median error per shape and its range, and the load on the machine.
#
#   bash bench/simulate_calibration.sh              # 5 calibrations each (about 2.5 minutes on 2 cores)
#   bash bench/simulate_calibration.sh --repeat 3
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DTL_BUILD:-build/release}
repeat=5
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat=$2; shift ;;
    *) echo "usage: bash bench/simulate_calibration.sh [--repeat N]" >&2; exit 2 ;;
  esac
  shift
done
cmake --build "$build" -j2 --target dtlab >/dev/null
dtlab=$build/labs/cli/dtlab
for from in unlinked-run same-run flop-rate; do
  "$dtlab" simulate --calibrate --calibrate-repeat "$repeat" --calibrate-compute-from "$from"
  echo
done
"$dtlab" simulate --calibrate --calibrate-repeat "$repeat" --calibrate-compute-us 3000
