#!/usr/bin/env bash
# Issue 46: content that used to crash or hang the viewer, as a table that stays fixed.
#  - strings longer than ImGui can draw in one call (4 vertices a character, 65,536 at most):
#    a report row's label of 100k characters, a note of 200k, 500 notes, an MoE routing
#    message quoting 100k characters: each view draws them clipped ("…") and exits 0; every
#    string of a pipeline, tensor-parallel and grid trace 200k characters long at once;
#  - a trace that is no regular file (a FIFO, a device, a folder) in every mode: exit 2 at once;
#  - a screenshot naming the trace it draws: exit 2 before the work, the trace intact;
#  - a small address-space limit (ulimit -v 300000): the process ends.
#   tests/viz/hostile_content.sh DTLAB DTLAB_VIZ XVFB_RUN FOLDER
set -euo pipefail
dtlab=$1 viz=$2 xvfb=$3 dir=$4/hostile_content
rm -rf "$dir" && mkdir -p "$dir"
"$dtlab" run experts --ranks 2 --layers 1 --hidden 16 --ffn 32 --steps 2 --trace "$dir/ex.json" >/dev/null
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(d + "/ex.json"))
od = t["otherData"]
r = json.loads(od["report"])
r["rows"][0]["label"] = "L" * 100000
r["notes"] += ["n" * 200000] + ["note %d" % i for i in range(500)]
od["report"] = json.dumps(r)
od["moe_routing"] = json.dumps({"omitted": "x" * 100000})
json.dump(t, open(d + "/long.json", "w"))
PY
# A lab's trace with its strings 200,000 characters long at once (the lab's name and the
# counts kept, so its own views open): each event's name, in the JSON metadata (the split
# picture, the grid, simulated schedules, formulas, the report) the first string under each
# key name (the 16 MiB of metadata hold no more), the plain ones (device, formulas in words). tests/viz/long_strings_test.cpp does it one field
# at a time without a window; here the real window draws them (an OpenGL draw list).
"$dtlab" run pipeline --ranks 2 --steps 1 --trace "$dir/pp.json" >/dev/null
"$dtlab" run tensor_parallel --model gpt --ranks 2 --layers 1 --steps 1 --trace "$dir/tp.json" >/dev/null
"$dtlab" run grid --ranks 8 --dp 2 --tp 2 --pp 2 --steps 1 --check off --trace "$dir/grid.json" >/dev/null
python3 - "$dir" pp tp grid <<'PY'
import json, sys
d = sys.argv[1]
W = "W" * 200000
def lengthen(v, key, done):  # the first string under each key name (within the 16 MiB of metadata)
    if isinstance(v, str) and key not in done: done.add(key); return W
    if isinstance(v, list): return [lengthen(x, key, done) for x in v]
    if isinstance(v, dict): return {k: lengthen(x, k, done) for k, x in v.items()}
    return v
for name in sys.argv[2:]:
    t = json.load(open(f"{d}/{name}.json"))
    for e in t["traceEvents"]:
        if e.get("ph") != "M" and "name" in e: e["name"] = W
    od, done = t["otherData"], set()
    for k, v in list(od.items()):
        if k == "lab" or not isinstance(v, str): continue
        try: parsed = json.loads(v)
        except ValueError: parsed = None
        if isinstance(parsed, (dict, list)): od[k] = json.dumps(lengthen(parsed, k, done))
        elif parsed is None: od[k] = W  # words, not a number
    json.dump(t, open(f"{d}/{name}_long.json", "w"))
PY
fail=0
for shot in pp:pipeline pp:report tp:split tp:activations grid:topology grid:timeline grid:memory; do
  trace=${shot%%:*} view=${shot#*:}
  out=$(timeout -s KILL 60 "$xvfb" -a -s '-screen 0 1280x800x24' "$viz" "$dir/${trace}_long.json" --view "$view" \
        --window-width 1280 --window-height 800 --screenshot "$dir/${trace}_$view.png" 2>&1) && code=0 || code=$?
  if [ "$code" -ne 0 ]; then echo "${trace}_long.json --view $view: exit $code" >&2; echo "$out" | cut -c1-300 >&2; fail=1; fi
done
for view in report routing timeline; do
  out=$(timeout -s KILL 60 "$xvfb" -a -s '-screen 0 1280x800x24' "$viz" "$dir/long.json" --view "$view" \
        --window-width 1280 --window-height 800 --screenshot "$dir/$view.png" 2>&1) && code=0 || code=$?
  if [ "$code" -ne 0 ]; then echo "--view $view on long strings: exit $code" >&2; echo "$out" >&2; fail=1; fi
done
mkfifo "$dir/pipe"
for args in "$dir/pipe --screenshot $dir/p.png" "--overlap $dir/pipe" "--bench $dir/pipe" "--overlap /dev/zero"; do
  out=$(timeout -s KILL 20 "$viz" $args 2>&1) && code=0 || code=$?
  if [ "$code" -ne 2 ] || ! grep -q "is not a regular file" <<<"$out"; then
    echo "dtlab-viz $args: exit $code (want 2, 'is not a regular file')" >&2; echo "$out" >&2; fail=1
  fi
done
# A folder is a PyTorch run's per-rank traces; one that holds none is exit 2, saying so.
out=$(timeout -s KILL 20 "$viz" --overlap "$dir" 2>&1) && code=0 || code=$?
if [ "$code" -ne 2 ] || ! grep -q "holds no torch.profiler trace" <<<"$out"; then
  echo "dtlab-viz --overlap $dir: exit $code (want 2, 'holds no torch.profiler trace')" >&2; echo "$out" >&2; fail=1
fi
# A screenshot may not replace the trace it draws (or its .dtlt): exit 2, the trace intact.
before=$(md5sum < "$dir/long.json")
for shot in "$dir/long.json" "$dir/./long.json.dtlt"; do
  out=$("$viz" "$dir/long.json" --screenshot "$shot" 2>&1) && code=0 || code=$?
  if [ "$code" -ne 2 ] || ! grep -q "writing it would destroy the input" <<<"$out"; then
    echo "dtlab-viz long.json --screenshot $shot: exit $code (want 2)" >&2; echo "$out" >&2; fail=1
  fi
done
[ "$before" = "$(md5sum < "$dir/long.json")" ] || { echo "the trace changed" >&2; fail=1; }
# Under a small address-space limit the viewer ends (it waited forever for OpenBLAS's threads).
for args in "--help" "--overlap $dir/ex.json"; do
  code=$( (ulimit -v 300000; timeout -s KILL 20 "$viz" $args >/dev/null 2>&1; echo $?) )
  if [ "$code" -ne 0 ]; then echo "ulimit -v 300000; dtlab-viz $args: exit $code (137: a hang)" >&2; fail=1; fi
done
exit $fail
