#!/usr/bin/env python3
"""Command output quoted in the docs, rerun: the README's examples (a ```sh block of one
`build/servesim ...` line followed by a ``` block of what it prints; a block ending in `...` quotes
the first lines only), the docs/studies tables written by `servesim ... --md FILE` (the command
is on the file's third line) and docs/policies.md's table (scripts/compare_policies.sh). --check (the default) reruns each and prints a diff of every stale
one, exit 1; --write regenerates them in place. Lines are compared without trailing spaces; no
quoted output holds a wall-clock time (the check would say so).

Usage: scripts/doc_examples.py [--check | --write | --self-test] [--servesim build/servesim] [--only SUBSTRING]
--self-test: a copy of the README with one quoted figure changed must be found stale (the check
can fail), and the copy as it is must not.
"""
import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Studies whose command no longer runs as written, each with the reason; printed on every check so
# the exclusion is seen, not silent. Remove an entry once its study is re-created.
BROKEN = {}


class CommandFailed(Exception):
    pass


def run(servesim, args):
    r = subprocess.run([servesim] + args, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise CommandFailed(f"`servesim {' '.join(args)}` exited {r.returncode}: {r.stderr.strip()[:300]}")
    return r.stdout


def clean(text):
    return [line.rstrip() for line in text.rstrip("\n").split("\n")]


# README.md: ```sh\nbuild/servesim ...\n```\n\n```\nOUTPUT\n```
README_BLOCK = re.compile(r"```sh\n(build/servesim [^\n]+)\n```\n\n```\n(.*?)```\n", re.S)


def readme_examples(servesim, write, only, root=ROOT):
    path = os.path.join(root, "README.md")
    text = open(path).read()
    stale, out, pos = [], [], 0
    for m in README_BLOCK.finditer(text):
        command, quoted = m.group(1), m.group(2)
        if only and only not in command:
            continue
        lines = clean(quoted)
        truncated = lines[-1] == "..."
        keep = len(lines) - 1 if truncated else None
        fresh = clean(run(servesim, shlex.split(command)[1:]))
        if truncated:
            fresh = fresh[:keep] + ["..."]
        if fresh != lines:
            stale.append(("README.md: " + command, lines, fresh))
        out.append(text[pos:m.start(2)])
        out.append("\n".join(fresh) + "\n")
        pos = m.end(2)
    out.append(text[pos:])
    if write and stale:
        open(path, "w").write("".join(out))
    return stale


def study_examples(servesim, write, only):
    stale = []
    studies = os.path.join(ROOT, "docs", "studies")
    for name in sorted(os.listdir(studies)):
        path = os.path.join(studies, name)
        lines = open(path).read().split("\n")
        if len(lines) < 3 or not lines[2].startswith("`servesim "):
            continue  # written by a script (its own header says which), or the index
        command = lines[2].strip("`")
        if only and only not in command:
            continue
        if name in BROKEN:
            print(f"skipped: docs/studies/{name}: {BROKEN[name]}")
            continue
        args = shlex.split(command)[1:]
        target = args[args.index("--md") + 1]
        with tempfile.TemporaryDirectory() as tmp:
            fresh_path = os.path.join(tmp, "out.md")
            args_tmp = list(args)
            args_tmp[args.index("--md") + 1] = fresh_path
            run(servesim, args_tmp)
            fresh = open(fresh_path).read()
        # The table records the command as typed: with the docs path, not the temporary one.
        fresh = fresh.replace(fresh_path, target)
        if clean(fresh) != clean("\n".join(lines)):
            stale.append(("docs/studies/" + name + ": " + command, clean("\n".join(lines)), clean(fresh)))
            if write:
                open(path, "w").write(fresh)
    return stale


def policies_example(servesim, write, only):
    """docs/policies.md's table: the lines scripts/compare_policies.sh prints, from its header row
    to the saturation line, rerun and compared."""
    command = "scripts/compare_policies.sh"
    if only and only not in command:
        return []
    path = os.path.join(ROOT, "docs", "policies.md")
    text = open(path).read()
    start = text.index("| policy | done |")
    end = text.index("\n", text.index("saturation batch size (cost model", start))
    env = dict(os.environ, SERVESIM=servesim)
    r = subprocess.run(["bash", os.path.join(ROOT, command)], cwd=ROOT, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise CommandFailed(f"`{command}` exited {r.returncode}: {r.stderr.strip()[:300]}")
    fresh, quoted = clean(r.stdout), clean(text[start:end])
    if fresh == quoted:
        return []
    if write:
        open(path, "w").write(text[:start] + "\n".join(fresh) + text[end:])
    return [("docs/policies.md: " + command, quoted, fresh)]


def self_test(servesim):
    """The check finds a changed figure in a copy of the README, and nothing in an unchanged copy."""
    text = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"MFU (\d)", text)
    if not m:
        print("self-test: the README's roofline block has no MFU figure to change")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "README.md"), "w").write(text)
        clean_copy = readme_examples(servesim, False, "roofline", tmp)
        changed = text[:m.start(1)] + str((int(m.group(1)) + 1) % 10) + text[m.end(1):]
        open(os.path.join(tmp, "README.md"), "w").write(changed)
        stale = readme_examples(servesim, False, "roofline", tmp)
    ok = not clean_copy and len(stale) == 1
    print(f"self-test: unchanged copy {len(clean_copy)} stale, changed copy {len(stale)} stale: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="regenerate the stale blocks in place")
    ap.add_argument("--check", action="store_true", help="report stale blocks, exit 1 (the default)")
    ap.add_argument("--servesim", default=os.path.join(ROOT, "build", "servesim"))
    ap.add_argument("--only", default="", help="only the commands containing this text")
    ap.add_argument("--self-test", action="store_true", help="check that the check finds a changed figure")
    a = ap.parse_args()
    servesim = os.path.abspath(a.servesim)
    if a.self_test:
        return self_test(servesim)
    try:
        stale = (readme_examples(servesim, a.write, a.only) + study_examples(servesim, a.write, a.only) +
                 policies_example(servesim, a.write, a.only))
    except CommandFailed as e:
        print(f"doc_examples: a quoted command no longer runs: {e}")
        return 1
    for where, old, new in stale:
        print(f"stale: {where}")
        sys.stdout.writelines(line + "\n" for line in difflib.unified_diff(old, new, "quoted", "printed now", lineterm="", n=1))
    if stale and not a.write:
        print(f"{len(stale)} quoted outputs differ from what the commands print: scripts/doc_examples.py --write regenerates them")
        return 1
    print(f"doc examples: {'regenerated ' + str(len(stale)) if a.write else 'all current'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
