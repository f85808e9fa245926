#!/usr/bin/env bash
# The curriculum's DDP milestone on thread ranks: 2 ranks over PCIe vs NVLink, small
# model, global batch swept, against 1 rank on the same global batch (measured in the
# same run by the lab). Prints a Markdown table; needs jq.
#
#   labs/scripts/ddp_milestone.sh [path/to/dtlab] [slowdown]
#
# The links are slowed `slowdown` times (default 100): a CPU core computes about 1000x
# slower than a GPU, so an unslowed link would make communication look free here.
set -euo pipefail
dtlab=${1:-build/release/labs/cli/dtlab}
slowdown=${2:-100}
model=(--width 512 --depth 4 --steps 4)  # 1 warm-up step, then the median of 5 runs of 4

row() {  # the measured value of a report row, by its id, from the JSON report on stdin
  jq -r --arg id "$1" '.rows[] | select(.id == $id) | .measured'
}

echo "| link (slowed ${slowdown}x) | global batch | compute/step | exposed comm/step | comm adds | efficiency | 1 rank step | 2 ranks step | speedup |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for link in pcie4 nvlink4; do
  for batch in 8 64 256 1024; do
    out=$("$dtlab" run ddp --ranks 2 --variant bucketed "${model[@]}" --batch "$batch" --link "$link" --link-slowdown "$slowdown" --json)
    compute=$(row bucketed.compute_per_step <<<"$out")
    exposed=$(row bucketed.exposed_comm_per_step <<<"$out")
    one=$(row one_rank_step_time <<<"$out")
    two=$(row bucketed.step_time <<<"$out")
    eff=$(row bucketed.efficiency <<<"$out")
    speedup=$(row bucketed.speedup <<<"$out")
    awk -v l="$link" -v b="$batch" -v c="$compute" -v e="$exposed" -v o="$one" -v t="$two" -v f="$eff" -v s="$speedup" \
      'BEGIN { printf "| %s | %d | %.2f ms | %.2f ms | %.0f%% | %.2f | %.2f ms | %.2f ms | %.2fx%s |\n",
               l, b, c * 1e3, e * 1e3, 100 * e / c, f, o * 1e3, t * 1e3, s, (s < 1 ? " (slower than 1 rank)" : "") }'
  done
done
