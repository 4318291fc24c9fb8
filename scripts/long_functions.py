#!/usr/bin/env python3
"""Functions in sim/ longer than a limit (default 80 lines, from the opening brace to the closing one).

Usage: scripts/long_functions.py [--max N] [DIR]  (DIR defaults to sim/)
Prints one line per long function, longest first: lines, file:line, name. A function long for a
good reason says so in the comment just above it, with the words "long because"; those are listed
as excused. Exit 1 when a long function gives no reason.

A brace counter, not a parser: comments, strings and raw strings are blanked first; a brace whose
header (the text since the last ; { or }) has a ')' and is not a class, struct, enum, union or
namespace opens a function, and braces inside a function belong to it (lambdas included).
"""
import argparse
import os
import re
import sys


def blank(src):
    """The source with comments and string/char literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
        elif src.startswith('/*', i):
            j = src.find('*/', i) + 2
        elif src.startswith('R"', i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == '_')):
            delim = re.match(r'R"([^(]*)\(', src[i:]).group(1)
            end = ')' + delim + '"'
            j = src.find(end, i) + len(end)
        elif c in '"\'' and not (c == "'" and i > 0 and src[i - 1].isalnum()):  # not a digit separator
            j = i + 1
            while src[j] != c:
                j += 2 if src[j] == '\\' else 1
            j += 1
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r'[^\n]', ' ', src[i:j]))
        i = j
    return ''.join(out)


def long_functions(path, limit):
    raw = open(path, encoding='utf-8').read()
    lines = raw.split('\n')
    s = blank(raw)
    stack, last, line, found = [], 0, 1, []
    for i, c in enumerate(s):
        if c == '\n':
            line += 1
        elif c == '{':
            head = s[last:i].strip()
            if any(kind == 'fn' for kind, _, _ in stack):
                kind = 'block'
            elif re.search(r'\b(namespace|struct|class|enum|union)\b[^()]*$', head) or head.endswith('=') or not head:
                kind = 'scope'
            else:
                kind = 'fn' if ')' in head else 'block'
            names = re.findall(r'([~\w:]+)\s*\(', head)
            stack.append((kind, line, names[0] if names else '?'))
            last = i + 1
        elif c == '}':
            kind, start, name = stack.pop()
            last = i + 1
            if kind == 'fn' and line - start + 1 > limit:
                # The comment block right above the signature (which may span lines).
                k = start - 1
                while k > 0 and not lines[k - 1].strip().startswith('//') and lines[k - 1].strip():
                    k -= 1
                comment = []
                while k > 0 and lines[k - 1].strip().startswith('//'):
                    comment.append(lines[k - 1])
                    k -= 1
                excused = 'long because' in ' '.join(comment)
                found.append((line - start + 1, path, start, name, excused))
        elif c == ';':
            last = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--max', type=int, default=80)
    ap.add_argument('dir', nargs='?', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'sim'))
    a = ap.parse_args()
    found = []
    for root, _, files in os.walk(a.dir):
        for f in sorted(files):
            if f.endswith(('.cpp', '.hpp')):
                found += long_functions(os.path.join(root, f), a.max)
    unexcused = 0
    for n, path, start, name, excused in sorted(found, reverse=True):
        print(f"{n:5d} {os.path.relpath(path)}:{start} {name}{'  (excused: long because ...)' if excused else ''}")
        unexcused += 0 if excused else 1
    return 1 if unexcused else 0


if __name__ == '__main__':
    sys.exit(main())
