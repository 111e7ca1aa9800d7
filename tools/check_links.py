#!/usr/bin/env python3
"""Checks that every relative link in the repository's Markdown resolves.

Usage:
    tools/check_links.py              # every Markdown file git knows of
    tools/check_links.py FILE.md ...  # only these (paths from the repository root)

Which files: those tracked by git (`git ls-files '*.md'`) plus the untracked
ones git does not ignore (`git ls-files --others --exclude-standard '*.md'`);
a tracked file deleted from the working tree is skipped.

What is checked, in every file: each inline link or image `[text](target)`,
`![alt](target)` and each reference definition `[label]: target`, outside
fenced and indented code blocks, inline code spans and HTML comments.
Targets with a URL scheme (`https://`, `mailto:`, ...) are not checked.
Otherwise the target's path, relative to the Markdown file's directory (or
to the repository root when it starts with `/`), must name an existing file
or directory. A fragment (`path#anchor`, or `#anchor` alone for the file
itself) into a Markdown file must name one of its anchors: a heading's slug
by GitHub's rules (lowercase; every character that is not a letter, digit,
space, '-' or '_' dropped; spaces to '-'; a repeated slug gets -1, -2, ...),
or an `id`/`name` attribute of an HTML tag in the file (`<a id="x"></a>`).
Fragments into other kinds of files (`file.h#L10`) are not checked.

Prints each broken link as `file:line: target (reason)`, then
`links: N checked, M broken`; exits 1 if any link is broken, 2 on a usage
error. Standard library only.
"""

import os
import re
import subprocess
import sys
import urllib.parse

SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
# [text](target "title") and ![alt](target); text may hold one level of
# brackets ([`a[0]`](x)). The target is <...> or a run without spaces.
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*\]"
    r"\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[((?:[^\]\\]|\\.)+)\]:[ \t]*(<[^>\n]*>|\S+)")
HTML_ANCHOR = re.compile(r"<[A-Za-z][^>]*?\s(?:id|name)\s*=\s*[\"']([^\"']+)[\"']")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
HTML_TAG = re.compile(r"<[^>]+>")
LINK_IN_TEXT = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)")


def repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=here,
                             check=True, capture_output=True, text=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.path.dirname(here)


def markdown_files(root):
    files = []
    for extra in ([], ["--others", "--exclude-standard"]):
        out = subprocess.run(["git", "ls-files", "-z"] + extra + ["--", "*.md"],
                             cwd=root, check=True, capture_output=True)
        files += [f for f in out.stdout.decode("utf-8", "replace").split("\0") if f]
    seen = set()
    result = []
    for f in files:
        if f not in seen and os.path.isfile(os.path.join(root, f)):
            seen.add(f)
            result.append(f)
    return sorted(result)


def closes_fence(line, fence):
    """True if `line` closes the fenced code block opened by `fence`: the
    same character, at least as many times, and nothing else."""
    stripped = line.strip()
    return (stripped.startswith(fence[0]) and set(stripped) == {fence[0]}
            and len(stripped) >= len(fence))


def prose_lines(text):
    """Yields (line number, line) for the lines outside code blocks, with
    inline code spans and HTML comments blanked out."""
    fence = None          # the opening fence while inside a fenced block
    in_comment = False
    prev_blank = True
    in_code = False       # inside an indented code block
    in_list = False       # the last paragraph was a list item or its continuation
    for number, line in enumerate(text.split("\n"), 1):
        if fence:
            if closes_fence(line, fence):
                fence = None
            continue
        m = FENCE.match(line)
        if m and not in_code:
            fence = m.group(1)
            prev_blank = False
            continue
        blank = not line.strip()
        indented = line.startswith("    ") or line.startswith("\t")
        if in_code:
            if blank or indented:
                continue
            in_code = False
        elif indented and prev_blank and not in_list and not blank:
            in_code = True
            continue
        if blank:
            prev_blank = True
            continue
        if LIST_ITEM.match(line):
            in_list = True
        elif not indented and prev_blank:
            in_list = False
        prev_blank = False
        # HTML comments, possibly over several lines.
        out = []
        i = 0
        while i < len(line):
            if in_comment:
                end = line.find("-->", i)
                if end < 0:
                    i = len(line)
                else:
                    in_comment = False
                    i = end + 3
            else:
                start = line.find("<!--", i)
                if start < 0:
                    out.append(line[i:])
                    i = len(line)
                else:
                    out.append(line[i:start])
                    in_comment = True
                    i = start + 4
        line = "".join(out)
        line = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        yield number, line


def slug(heading):
    text = LINK_IN_TEXT.sub(r"\1", heading)
    text = HTML_TAG.sub("", text)
    text = text.replace("`", "").strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors_of(text):
    anchors = set()
    counts = {}
    fence = None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if fence:
            if closes_fence(line, fence):
                fence = None
            continue
        m = FENCE.match(line)
        if m:
            fence = m.group(1)
            continue
        heading = None
        m = ATX.match(line)
        if m and not line.startswith("    "):
            heading = m.group(2) or ""
        elif i + 1 < len(lines) and line.strip() and not line.startswith("    ") \
                and SETEXT.match(lines[i + 1]) and not LIST_ITEM.match(line):
            heading = line.strip()
        if heading is not None:
            s = slug(heading)
            n = counts.get(s, 0)
            counts[s] = n + 1
            anchors.add(s if n == 0 else f"{s}-{n}")
        for a in HTML_ANCHOR.findall(line):
            anchors.add(a)
            anchors.add(a.lower())
    return anchors


def links_of(text):
    for number, line in prose_lines(text):
        m = REF_DEF.match(line)
        if m:
            yield number, m.group(2)
            continue
        for m in INLINE_LINK.finditer(line):
            yield number, m.group(1)


def main(argv):
    root = repo_root()
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    files = argv or markdown_files(root)
    cache = {}

    def anchors(path):
        if path not in cache:
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    cache[path] = anchors_of(f.read())
            except OSError:
                cache[path] = set()
        return cache[path]

    checked = broken = 0
    for rel in files:
        path = os.path.join(root, rel)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"check_links: {rel}: {e.strerror}", file=sys.stderr)
            return 2
        for number, target in links_of(text):
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1].strip()
            if not target or SCHEME.match(target):
                continue
            checked += 1
            raw_path, _, fragment = target.partition("#")
            target_path = urllib.parse.unquote(raw_path)
            if target_path.startswith("/"):
                resolved = os.path.join(root, target_path.lstrip("/"))
            elif target_path:
                resolved = os.path.join(os.path.dirname(path), target_path)
            else:
                resolved = path
            resolved = os.path.normpath(resolved)
            reason = None
            if not os.path.exists(resolved):
                reason = "no such file or directory"
            elif fragment and os.path.isfile(resolved) and resolved.endswith(".md"):
                frag = urllib.parse.unquote(fragment)
                names = anchors(resolved)
                if frag not in names and frag.lower() not in names:
                    where = "this file" if resolved == os.path.normpath(path) \
                        else os.path.relpath(resolved, root)
                    reason = f"no heading or anchor #{frag} in {where}"
            if reason:
                broken += 1
                print(f"{rel}:{number}: {target} ({reason})")
    print(f"links: {checked} checked, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
