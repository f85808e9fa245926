#!/usr/bin/env bash
# The README starts a learner and its numbers stay true (issue 28):
#   1. README.md has at most 400 lines, and "dtlab learn" appears in its first 60;
#   2. every relative link and image in README.md and docs/*.md points to a file that
#      exists, and every #anchor to a heading of the page it names;
#   3. every number the README, docs/exercises.md and docs/path.md (what `dtlab learn`
#      prints) state about the exercises — how many there are, the total points, each
#      exercise's points — equals what the grader of this build reports
#      (`dtlab grade --json`), and `dtlab learn` states the same.
# Prints each check and stops at the first mismatch (exit 1).
#
#   bash tests/docs/readme_check.sh build/release/labs/cli/dtlab     # from the repository root
set -euo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 path/to/dtlab   (run from the repository root)" >&2
  exit 2
fi
dtlab=$1
if [ ! -f README.md ] || [ ! -d docs ]; then
  echo "readme_check: run from the repository root (no README.md or docs/ here)" >&2
  exit 2
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# ---- 1. length, and where the learner starts -----------------------------------------
lines=$(wc -l <README.md)
[ "$lines" -le 400 ] || fail "README.md has $lines lines, more than 400 (move reference material to docs/)"
echo "ok: README.md has $lines lines (at most 400)"
start=$(grep -n -m1 'dtlab learn' README.md | cut -d: -f1 || true)
if [ -z "$start" ] || [ "$start" -gt 60 ]; then
  fail "\"dtlab learn\" is not in README.md's first 60 lines (first at line ${start:-none})"
fi
echo "ok: \"dtlab learn\" first appears on README.md line $start (within the first 60)"

# ---- what the binary says ----------------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
"$dtlab" grade --hint 0 --json "$work/grade.json" >"$work/grade.txt" 2>&1 || status=$?
# 0: everything passes (the solutions track), 1: something fails (the exercise track).
if { [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; } || [ ! -s "$work/grade.json" ]; then
  tail -n 5 "$work/grade.txt" >&2
  fail "\`$dtlab grade --json\` exited $status without writing its scores"
fi
"$dtlab" learn >"$work/learn.md" || fail "\`$dtlab learn\` failed"

# ---- 2 and 3 -------------------------------------------------------------------------
python3 - "$work/grade.json" "$work/learn.md" <<'PY'
import glob, json, os, re, sys

grade_json, learn_path = sys.argv[1], sys.argv[2]

def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

def ok(msg):
    print("ok: " + msg)

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()

# ---- 2. links ------------------------------------------------------------------------
def prose_lines(text):
    """(line number, line) outside fenced code blocks, inline code spans blanked."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None and not line.startswith("    "):
            yield n, re.sub(r"(`+)(.+?)\1", lambda c: " " * len(c.group(0)), line)

def slug(heading):
    """GitHub's anchor for a heading's text."""
    h = re.sub(r"`([^`]*)`", r"\1", heading)
    h = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = h.replace("*", "").strip().lower()
    h = "".join(ch for ch in h if ch.isalnum() or ch in "-_ ")
    return h.replace(" ", "-")

def anchors(path):
    seen, out = {}, set()
    fence = None
    for line in read(path).split("\n"):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m:
            fence = None if fence else m.group(1)[0]
            continue
        h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fence is None and h:
            s = slug(h.group(1))
            n = seen.get(s, 0)
            out.add(s if n == 0 else "%s-%d" % (s, n))
            seen[s] = n + 1
    return out

link_re = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
img_re = re.compile(r"<img\s[^>]*src=\"([^\"]+)\"")
pages = ["README.md"] + sorted(glob.glob("docs/*.md"))
nlinks = nanchors = 0
for page in pages:
    for n, line in prose_lines(read(page)):
        for target in link_re.findall(line) + img_re.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            where = "%s:%d: %s" % (page, n, target)
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                fail(where + ": no such file (" + dest + ")")
            nlinks += 1
            if anchor and dest.endswith(".md"):
                if anchor not in anchors(dest):
                    fail(where + ": " + dest + " has no heading with the anchor #" + anchor)
                nanchors += 1
ok("%d relative links and images in %s resolve to files, %d anchors to headings"
   % (nlinks, ", ".join(pages), nanchors))

# ---- 3. the exercise numbers --------------------------------------------------------------
g = json.load(open(grade_json, encoding="utf-8"))
points = {e["id"]: e["max_points"] for e in g["exercises"]}
count, total = len(points), g["max_points"]
if sum(points.values()) != total:
    fail("the grader's max_points %d is not the sum of its exercises' (%d)" % (total, sum(points.values())))
ok("the grader (dtlab grade --json, track %s): %d exercises, %d points in all" % (g["track"], count, total))

ones = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen " \
       "fifteen sixteen seventeen eighteen nineteen".split()
tens = "twenty thirty forty fifty sixty seventy eighty ninety".split()
words = {w: i for i, w in enumerate(ones)}
for t, w in enumerate(tens, 2):
    words[w] = 10 * t
    for i in range(1, 10):
        words[w + "-" + ones[i]] = 10 * t + i
del words["zero"]  # "ZeRO exercises" are the ZeRO lab's, not a count
number = r"(\d+|" + "|".join(sorted(words, key=len, reverse=True)) + r")"

def value(s):
    return int(s) if s.isdigit() else words[s.lower()]

def check_statements(name, text, need):
    """The sentences about the exercises: 'N exercises', 'N points in all', '0/N to start',
    'N/N  all passed'. need: the kinds that must appear at least once."""
    flat = re.sub(r"\s+", " ", text)
    found = {}
    for kind, rx, want in [
        ("exercise count", r"\b" + number + r" exercises\b", count),
        ("total points", r"\b(\d+) points in all\b", total),
        ("starting score", r"\b0/(\d+) to start\b", total),
        ("full score", r"\b(\d+)/(\d+) all passed\b", total),
    ]:
        for m in re.finditer(rx, flat, re.I):
            if any(value(v) != want for v in m.groups()):
                fail('%s says "%s" (%s), the grader reports %d' % (name, m.group(0), kind, want))
            found[kind] = found.get(kind, 0) + 1
    for kind in need:
        if not found.get(kind):
            fail("%s states no %s to check (expected e.g. %s)" % (name, kind,
                 {"exercise count": '"%d exercises"' % count, "total points": '"%d points in all"' % total}[kind]))
    ok("%s: %s" % (name, ", ".join("%d× %s" % (v, k) for k, v in sorted(found.items())) or "no exercise numbers"))

def check_path(name, text):
    """'### id (N points)' per exercise, each as the grader's, and every exercise there."""
    seen = {}
    for m in re.finditer(r"^### ([A-Za-z0-9_]+)\b.*\((\d+) points\)\s*$", text, re.M):
        ex, pts = m.group(1), int(m.group(2))
        if ex not in points:
            fail('%s has "%s", but the grader has no exercise %s' % (name, m.group(0).strip(), ex))
        if pts != points[ex]:
            fail('%s says "%s", the grader gives %s %d points' % (name, m.group(0).strip(), ex, points[ex]))
        seen[ex] = pts
    missing = [e for e in points if e not in seen]
    if missing:
        fail("%s has no '### %s (N points)' section for: %s" % (name, missing[0], ", ".join(missing)))
    ok("%s: all %d exercises, each with the grader's points" % (name, count))

readme, exercises, path, learn = read("README.md"), read("docs/exercises.md"), read("docs/path.md"), read(learn_path)
check_statements("README.md", readme, ["exercise count", "total points"])
check_statements("docs/exercises.md", exercises, ["exercise count", "total points"])
check_statements("docs/path.md", path, ["exercise count"])
check_statements("dtlab learn", learn, ["exercise count"])
check_path("docs/path.md", path)
check_path("dtlab learn", learn)

# docs/exercises.md's table: | `id` ... | points | ...
rows = {}
for line in exercises.split("\n"):
    m = re.match(r"^\|\s*`([A-Za-z0-9_]+)`[^|]*\|\s*(\d+)\s*\|", line)
    if m and m.group(1) in points:
        rows[m.group(1)] = int(m.group(2))
        if int(m.group(2)) != points[m.group(1)]:
            fail('docs/exercises.md\'s table gives %s %s points, the grader %d'
                 % (m.group(1), m.group(2), points[m.group(1)]))
missing = [e for e in points if e not in rows]
if missing:
    fail("docs/exercises.md's table has no row for: " + ", ".join(missing))
ok("docs/exercises.md's table: all %d exercises, each with the grader's points" % count)
PY
echo "readme_check: all checks passed"
