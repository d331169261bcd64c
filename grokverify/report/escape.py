"""Text from a claim file, made inert in Markdown (and the HTML a Markdown viewer makes of it).

A claim's title, statement, quote, notes, names and descriptions are data: whatever they
contain (a `|` that ends a table cell, a line break then `# heading`, `<script>`, a `[link](…)`,
a backtick that closes a code span) must show as the characters written and change nothing
around them.
"""

from __future__ import annotations

import re

# Markdown's punctuation that opens or closes inline markup anywhere in a line (emphasis, code,
# links and images, table cells, strikethrough), backslash-escaped; an underscore inside a word
# (lr_up) opens no emphasis and stays as written
_MARKUP = re.compile(r"([\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
# and what starts a block at the start of a line: a heading, a list, a setext underline, a quote
_LINE_START = re.compile(r"^([#+\-=>])|^(\d+)([.)])")
# what opens HTML (a tag, a comment, an autolink: "<" then a letter, "/", "!" or "?") or an
# entity ("&" then a letter or "#"), as entities; "<=", "a & b" and ">" open nothing and stay
# as written, so report.md reads as plain text (a backslash does not stop a tag or an entity)
_HTML = re.compile(r"<(?=[A-Za-z/!?])|&(?=[A-Za-z#])")
_ENTITY = {"<": "&lt;", "&": "&amp;"}
_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x85\u2028\u2029]")


def _escape_inline(line: str) -> str:
    return _MARKUP.sub(r"\\\1", _HTML.sub(lambda m: _ENTITY[m[0]], line))


def _escape_line(line: str) -> str:
    line = _escape_inline(line)
    return _LINE_START.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", line)


def text(value: object) -> str:
    """One line of inert text: for a heading, a table cell, a list item (line breaks become
    spaces, so nothing can start a new block)."""
    return _escape_line(_BREAKS.sub(" ", str(value)).strip())


def cell(value: object) -> str:
    """Inert text inside a table cell: as `text`, but a cell starts no block, so a leading
    number or dash stays as written ("0.5", not "0\\.5")."""
    return _escape_inline(_BREAKS.sub(" ", str(value)).strip())


def block(value: object) -> list[str]:
    """Inert prose that keeps its lines: each line escaped, leading indentation dropped (four
    spaces would make a code block), blank lines kept as paragraph breaks, and every other line
    break a hard break (so the lines show as written, not merged into one)."""
    lines = [ln.strip() for ln in _BREAKS.split(str(value).strip())]
    out = []
    for i, ln in enumerate(lines):
        hard = i + 1 < len(lines) and ln and lines[i + 1]
        out.append(_escape_line(ln) + ("\\" if hard else ""))
    return out


def code(value: object) -> str:
    """An inline code span holding `value` verbatim: fenced by more backticks than any run of
    them inside, on one line."""
    raw = _BREAKS.sub(" ", str(value))
    longest = max((len(run) for run in re.findall(r"`+", raw)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if raw.startswith("`") or raw.endswith("`") else ""
    return f"{fence}{pad}{raw}{pad}{fence}"
