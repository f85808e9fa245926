#!/usr/bin/env bash
# The student track's grader as a learner sees it, every stub still unimplemented:
#   bash tests/grade/check_student_grader.sh build/release/student/dtlab [source dir]
# For each hint level N = 1, 2, 3, `dtlab grade --hint N`
#   - grades 0 points and names every exercise's stub as "... is not implemented yet",
#   - prints hint N of every exercise (in the table and in the JSON),
#   - shows none of GoogleTest's internals (file:line, "thrown in the test body", ...),
#   - is valid UTF-8 with no doubly encoded characters ("Â·"),
#   - and contains no non-trivial line of solutions/*.cpp;
# and the three levels print different text. Run by tests/run_all.sh on the stubs as they
# are in the repository (once a learner fills one in, its hint rightly disappears).
set -euo pipefail
dtlab=${1:?usage: check_student_grader.sh DTLAB [SOURCE_DIR]}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_student_grader: $*" >&2; exit 1; }

# Non-trivial solution lines: comments cut, whitespace squeezed, at least 10 characters,
# no preprocessor lines, namespaces or closing braces (tests/grade/hints_test.cpp: the same).
for f in "$src"/solutions/*.cpp; do
  sed -e 's://.*$::' -e 's/[[:space:]]\{1,\}/ /g' -e 's/^ //' -e 's/ $//' "$f"
done | awk 'length($0) >= 10 && !/^#/ && !/^namespace/ && !/^} /' | sort -u >"$tmp/solution_lines"
[ "$(wc -l <"$tmp/solution_lines")" -gt 50 ] || fail "found no solution lines in $src/solutions/*.cpp"

for level in 1 2 3; do
  out=$tmp/out$level.txt json=$tmp/grade$level.json
  status=0
  "$dtlab" grade --hint "$level" --json "$json" >"$out" 2>"$tmp/err$level.txt" || status=$?
  [ "$status" -eq 1 ] || fail "--hint $level: exit $status, expected 1 (tests fail)"
  grep -q '"total_points": 0' "$json" || fail "--hint $level: the stubs should score 0 points"
  exercises=$(grep -c '"id":' "$json")
  [ "$exercises" -ge 13 ] || fail "--hint $level: $exercises exercises graded, expected at least 13"
  for what in "Hint $level of 3" "is not implemented yet"; do
    n=$(grep -c "$what" "$out" || true)
    [ "$n" -eq "$exercises" ] || fail "--hint $level: '$what' on $n lines of the table, expected $exercises"
  done
  n=$(grep -c "\"hint\": \"Hint $level of 3" "$json" || true)
  [ "$n" -eq "$exercises" ] || fail "--hint $level: $n hints in the JSON, expected $exercises"
  if grep -nE '\.(cpp|h):[0-9]+|thrown in the test body|Value of:|Expected equality|Which is:|^Failed' "$out"; then
    fail "--hint $level: GoogleTest's internals in the grader's output (above)"
  fi
  # Clean UTF-8: every byte sequence valid, and none of the marks of UTF-8 read as Latin-1
  # and encoded again ("Â·" for "·", "Ã—" for "×", "â†’" for "→").
  for f in "$out" "$json"; do
    iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1 || fail "--hint $level: $(basename "$f") is not valid UTF-8"
    if grep -n 'Â\|Ã\|â€\|â†\|âˆ' "$f"; then fail "--hint $level: doubly encoded UTF-8 in $(basename "$f") (above)"; fi
  done
  # The whole output as one line with single spaces, so a wrapped hint is searched whole.
  tr '\n' ' ' <"$out" | sed -e 's/[[:space:]]\{1,\}/ /g' >"$tmp/flat$level.txt"
  if grep -o -F -f "$tmp/solution_lines" "$tmp/flat$level.txt"; then
    fail "--hint $level: the grader's output contains the solution's code (above)"
  fi
done
cmp -s "$tmp/out1.txt" "$tmp/out2.txt" && fail "--hint 1 and --hint 2 print the same"
cmp -s "$tmp/out2.txt" "$tmp/out3.txt" && fail "--hint 2 and --hint 3 print the same"
cmp -s "$tmp/out1.txt" "$tmp/out3.txt" && fail "--hint 1 and --hint 3 print the same"
echo "student grader: $exercises exercises, each named as not implemented with hints 1, 2 and 3; no solution code"

# Every lab runs on the untouched stubs (issue 28: a lab never fails because an exercise is
# not written yet), read from the registry (`dtlab list --json`), so a new lab is checked
# without editing this file: its small run (LabInfo::small_run), and the same with each other
# value of each of its choice options, one at a time, and its extra runs. Each run passes its checks with the
# references in the stubs' place (or is refused, exit 2: a combination the lab does not take),
# naming each reference it used with the stub's file; across a lab's runs, every exercise it
# lists is named (the lab calls each of them).
"$dtlab" list --json >"$tmp/labs.json" || fail "dtlab list --json failed"
python3 - "$tmp/labs.json" >"$tmp/runs.txt" <<'PY'
import json, sys
for lab in json.load(open(sys.argv[1])):
    base, name = lab["small_run"], lab["name"]
    exercises = ",".join(e["id"] for e in lab["exercises"]) or "-"
    print(name, exercises, " ".join(base))
    for option in lab["options"]:
        flag = "--" + option["name"]
        rest = [w for f, v in zip(base[::2], base[1::2]) if f != flag for w in (f, v)]  # the base less it
        for choice in option["choices"]:
            if choice != option["default"]:
                print(name, exercises, " ".join(rest + [flag, choice]))
    for args in lab.get("extra_runs", []):  # what one choice at a time does not reach (LabInfo::extra_runs)
        print(name, exercises, " ".join(args))
PY
runs=0 refused=0
declare -A named
while read -r lab exercises args; do
  runs=$((runs + 1)) status=0
  # shellcheck disable=SC2086  # the lab's options are words
  "$dtlab" run "$lab" $args >"$tmp/lab.txt" 2>&1 || status=$?
  if [ "$status" -eq 2 ]; then refused=$((refused + 1)); continue; fi
  [ "$status" -eq 0 ] || { tail -5 "$tmp/lab.txt" >&2; fail "dtlab run $lab $args failed on the stubs (exit $status)"; }
  grep -q '^result: OK' "$tmp/lab.txt" || fail "dtlab run $lab $args: no 'result: OK'"
  [ "$exercises" = - ] && continue
  # (each note ends with the command that grades the stub's exercise: its id)
  used=$(sed -n "s|^note: using the reference for .*: not written yet (exercises/$lab.cpp; dtlab grade --exercise \([a-z_0-9]*\))\$|\1|p" \
    "$tmp/lab.txt" | sort -u | tr '\n' ' ')
  [ -n "$used" ] || fail "dtlab run $lab $args: no note naming a reference it used in place of exercises/$lab.cpp"
  named[$lab]="${named[$lab]:-} $used"
done <"$tmp/runs.txt"
labs=0
declare -A checked
while read -r lab exercises _; do
  { [ "$exercises" = - ] || [ -n "${checked[$lab]:-}" ]; } && continue
  checked[$lab]=1 labs=$((labs + 1))
  for id in ${exercises//,/ }; do
    found=0
    for used_id in ${named[$lab]:-}; do if [ "$used_id" = "$id" ]; then found=1; fi; done
    [ "$found" -eq 1 ] || fail "no run of the $lab lab called the exercise $id on the stubs (named: ${named[$lab]:-none})"
  done
done <"$tmp/runs.txt"
echo "exercise track: $runs runs of every lab on the untouched stubs ($refused refused), each passing; each of the" \
  "$labs labs with exercises called every one of them, naming the references it ran"
