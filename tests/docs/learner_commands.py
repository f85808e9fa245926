#!/usr/bin/env python3
"""Runs every command the learner is told to type (issue 28).

Reads README.md and docs/path.md (what `dtlab learn` prints), collects each `dtlab ...`,
`dtlab-viz ...` and `labs/scripts/...` command they show — inline code, code blocks, and
the lab part of the README's command 1 — and runs them in the order a learner meets them,
in one scratch folder (so `dtlab-viz p.json` finds the p.json an earlier command wrote).
Viewer commands run under Xvfb and save a screenshot instead of opening a window. A
command fails the test when it exits non-zero or outlives its timeout; each prints its
time. Fragments a learner completes from the sentence (`--ranks 6`, `dtlab run LAB
--step`) are listed as skipped with the reason.

    python3 tests/docs/learner_commands.py [--quick] build/release/labs/cli/dtlab build/release/viz/dtlab-viz

As written the commands take about 10 minutes on 2 cores (the milestones train 4096-wide
models on purpose). --quick, what CI runs, caps each size option at a small value
(QUICK_CAPS: the same command, smaller numbers; a GPT run 60 steps) and runs a command that appears in both
documents once; it still fails on any option, lab or file a document gets wrong.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

DOCS = ["README.md", "docs/path.md"]
PROGRAMS = ("dtlab", "dtlab-viz", "labs/scripts/")
BUILD_PREFIXES = {"build/release/labs/cli/dtlab": "dtlab", "build/release/viz/dtlab-viz": "dtlab-viz",
                  "build/release/student/dtlab": "dtlab", "build/release/student/dtlab-viz": "dtlab-viz"}
TIMEOUT_S = 300
# --quick: the largest value each size option keeps (sizes with K/M/G suffixes compared as numbers).
QUICK_CAPS = {"--width": 256, "--depth": 8, "--batch": 32, "--bytes": 1 << 20, "--layers": 2, "--hidden": 128,
              "--seq": 64, "--iters": 3, "--steps": 20, "--micro-batches": 8, "--compute-us": 300, "-e": 1 << 20,
              "--tokens": 1024, "--ffn": 256, "--elements": 1 << 20}
SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def quick(words):
    """The command with every size option capped at QUICK_CAPS; a GPT training run then takes
    60 steps (or its --steps 0, an evaluation): at the capped shapes its loss check passes from
    about 60, and at 20 it passed or failed by the text the docs happen to hold."""
    out = list(words)
    for i in range(1, len(out) - 1):
        cap = QUICK_CAPS.get(out[i])
        m = re.fullmatch(r"(\d+)([KMG]?)", out[i + 1]) if cap else None
        if m and int(m.group(1)) * SUFFIX[m.group(2)] > cap:
            out[i + 1] = str(cap)
    if out[:3] == ["dtlab", "run", "gpt"]:
        if "--steps" not in out:
            out += ["--steps", "60"]
        elif out[out.index("--steps") + 1] != "0":
            out[out.index("--steps") + 1] = "60"
    return out


def spans_of(text):
    """Inline code spans (a span may wrap onto the next line) and code-block lines, in order."""
    out = []
    in_block = False
    block_lines, prose = [], []
    for line in text.splitlines():
        if line.startswith("```"):
            if in_block:
                out.extend(("block", l) for l in block_lines)
                block_lines = []
            else:
                out.extend(("inline", s) for s in inline_spans("\n".join(prose)))
                prose = []
            in_block = not in_block
            continue
        (block_lines if in_block else prose).append(line)
    out.extend(("inline", s) for s in inline_spans("\n".join(prose)))
    return out


def inline_spans(prose):
    return [" ".join(m.group(1).split()) for m in re.finditer(r"`([^`]+)`", prose)]


def commands_in(kind, text):
    """The runnable commands in one span or code-block line (a block line may chain several)."""
    if kind == "block":
        text = text.split(" #", 1)[0].strip()
        if text.startswith("#"):
            return []
    found = []
    for part in re.split(r"&&|;|\bthen\b|\belse\b", text):
        part = part.strip()
        for prefix, name in BUILD_PREFIXES.items():
            if part.startswith(prefix):
                part = name + part[len(prefix):]
        if part.startswith(PROGRAMS):
            found.append(part)
    return found


# --quick: commands another CI check already runs as the learner types them.
COVERED = {"dtlab grade": "the exercise-track stage of tests/run_all.sh and docs_readme_check run the grader"}


def why_skipped(cmd, small=False):
    if small and cmd in COVERED:
        return COVERED[cmd]
    words = shlex.split(cmd)
    if len(words) == 1:
        return "the program's name in a sentence"
    if any(re.fullmatch(r"[A-Z][A-Z_]+|\.\.\.", w) for w in words[1:]):
        return "a placeholder the learner fills in"
    if cmd.startswith("dtlab-viz") and not os.environ.get("DISPLAY") and not shutil.which("xvfb-run"):
        return "no display and no xvfb-run"
    return None


def as_run(cmd, dtlab, viz, shot, small):
    words = quick(shlex.split(cmd)) if small else shlex.split(cmd)
    if words[0] == "dtlab":
        return [dtlab] + words[1:]
    if words[0] == "dtlab-viz":
        # The viewer renders a few frames, saves them and exits instead of waiting for a person.
        display = [] if os.environ.get("DISPLAY") else ["xvfb-run", "-a"]
        return display + [viz] + words[1:] + ["--screenshot", shot, "--frames", "3"]
    return ["bash", os.path.join(ROOT, words[0])] + [dtlab if w.endswith("/dtlab") else w for w in words[1:]]


def main():
    args = sys.argv[1:]
    small = args[:1] == ["--quick"]
    args = args[1:] if small else args
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    dtlab, viz = (os.path.abspath(p) for p in args)
    failures, ran, seen = [], 0, set()
    for doc in DOCS:
        f, r = run_doc(doc, dtlab, viz, small, seen)
        failures += f
        ran += r
    print(f"{ran} learner commands ran, {len(failures)} failed")
    for f in failures:
        print("  failed: " + f)
    sys.exit(1 if failures or ran == 0 else 0)


def run_doc(doc, dtlab, viz, small, seen):
    """Runs one document's commands in order, each once, in a scratch folder of its own.
    With `small`, a command an earlier document ran (in `seen`) is not run again."""
    commands = []
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        for kind, span in spans_of(f.read()):
            commands += [c for c in commands_in(kind, span) if c not in commands and not (small and c in seen)]
    seen.update(commands)
    work = tempfile.mkdtemp(prefix="learner-commands-")
    failures, ran = [], 0
    for n, cmd in enumerate(commands):
        reason = why_skipped(cmd, small)
        if reason:
            print(f"skip  {doc}: {cmd}  ({reason})")
            continue
        argv = as_run(cmd, dtlab, viz, os.path.join(work, f"shot{n}.png"), small)
        start = time.monotonic()
        try:
            result = subprocess.run(argv, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    timeout=TIMEOUT_S, text=True, errors="replace")
            code, tail = result.returncode, result.stdout[-1500:]
        except subprocess.TimeoutExpired:
            code, tail = "timeout", f"still running after {TIMEOUT_S} s"
        seconds = time.monotonic() - start
        ran += 1
        if code == 0:
            print(f"ok    {seconds:6.1f} s  {doc}: {cmd}")
        else:
            print(f"FAIL  {seconds:6.1f} s  {doc}: {cmd}  (exit {code})\n{tail}")
            failures.append(f"{doc}: {cmd}")
    shutil.rmtree(work, ignore_errors=True)
    return failures, ran


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if __name__ == "__main__":
    main()
