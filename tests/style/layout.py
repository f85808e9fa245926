#!/usr/bin/env python3
"""The tree as docs/reference.md's Layout draws it, and a lab as files named after it.

Checks, printing each difference and exiting 1 when there is one:
  1. the top-level folders of the Layout block are the tree's, and the sub-folders it names
     under labs/ and viz/ are those folders' (no folder missing, none described that is gone);
  2. a lab with exercises has all of its pieces, each in its layer's folder:
     exercises/<lab>.h, exercises/<lab>.cpp, exercises/<lab>_hints.cpp, solutions/<lab>.cpp,
     tests/grade/<lab>/grade_test*.cpp and labs/<lab>/; no piece without its lab;
  3. a lab folder holds the lab alone: no exercises, solutions, hints, graded suites or views;
  4. tests/test_lab/, a lab added as any lab is, holds only files named after it.

    python3 tests/style/layout.py [REPO]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
NOT_FOLDERS_OF_THE_DESIGN = {"build", "shared"}  # build outputs; ../shared where a checkout holds it
LAB_SUPPORT = {"train", "cli", "simulate", "scripts"}  # labs/ folders that are not a lab


def layout_block():
    text = (ROOT / "docs/reference.md").read_text()
    section = text[text.index("## Layout"):]
    return section[section.index("```") + 3:section.index("```", section.index("```") + 3)]


def described(block):
    """{top folder: the text that describes it} from the block's lines."""
    tops, current = {}, None
    for line in block.splitlines():
        m = re.match(r"^([a-z_]+)/\s", line)
        if m:
            current = m.group(1)
            tops[current] = ""
        if current:
            tops[current] += " " + line
    return tops


def folders(path):
    if not path.is_dir():
        return set()
    return {p.name for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}


def check_layout(bad):
    tops = described(layout_block())
    real = folders(ROOT) - NOT_FOLDERS_OF_THE_DESIGN
    for name in sorted(real - tops.keys()):
        bad.append(f"docs/reference.md's Layout does not describe the folder {name}/")
    for name in sorted(tops.keys() - real):
        bad.append(f"docs/reference.md's Layout describes {name}/, which is not in the tree")
    for top in ("labs", "viz"):
        named = set(re.findall(r"(?<![\w/<.])([a-z_]+)/", tops.get(top, ""))) - {top}
        for name in sorted(folders(ROOT / top) - named):
            bad.append(f"docs/reference.md's Layout does not name {top}/{name}/")
        for name in sorted(named - folders(ROOT / top)):
            bad.append(f"docs/reference.md's Layout names {top}/{name}/, which is not in the tree")


def check_labs(bad):
    api = {p.stem for p in (ROOT / "exercises").glob("*.h")}
    labs = folders(ROOT / "labs") - LAB_SUPPORT
    for lab in sorted(api):
        pieces = [f"exercises/{lab}.cpp", f"exercises/{lab}_hints.cpp", f"solutions/{lab}.cpp", f"labs/{lab}"]
        bad += [f"the exercises of {lab} have no {p}" for p in pieces if not (ROOT / p).exists()]
        if not list((ROOT / "tests/grade" / lab).glob("grade_test*.cpp")):
            bad.append(f"the exercises of {lab} have no graded suite tests/grade/{lab}/grade_test*.cpp")
    orphans = [(f"solutions/{p.name}", p.stem) for p in (ROOT / "solutions").glob("*.cpp")]
    orphans += [(f"tests/grade/{d}/", d) for d in folders(ROOT / "tests/grade")]
    orphans += [(f"viz/views/{d}/", d) for d in folders(ROOT / "viz/views")]
    for path, lab in sorted(orphans):
        if lab not in labs or (not path.startswith("viz/") and lab not in api):
            bad.append(f"{path} belongs to no lab with exercises/{lab}.h and labs/{lab}/")
    for lab in sorted(labs):
        folder = ROOT / "labs" / lab
        stray = [p for p in folder.rglob("*") if p.name in ("exercises.h", "exercises.cpp", "solutions.cpp",
                 "hints.cpp", "reference.h") or p.name.startswith("grade_test") or p.name == "views"]
        bad += [f"{p.relative_to(ROOT)}: a lab folder holds the lab alone (see docs/reference.md, Adding a lab)"
                for p in stray]


def check_test_lab(bad):
    for path in sorted((ROOT / "tests/test_lab").rglob("*")):
        rel = path.relative_to(ROOT / "tests/test_lab")
        if path.is_file() and "test_lab" not in rel.parts[:-1] and not rel.name.startswith("test_lab"):
            bad.append(f"tests/test_lab/{rel}: a lab's file is named after it (or lies in a folder that is)")


def main():
    bad = []
    check_layout(bad)
    check_labs(bad)
    check_test_lab(bad)
    for line in bad:
        print(line)
    print(f"layout: {len(bad)} difference(s) between the tree, docs/reference.md and the lab rule")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
