"""Safe YAML loading that remembers where every key came from, so errors can name the line.

Claims are data: only the SafeLoader's node types are built, duplicate keys are errors (a
silently overwritten key is a silently ignored key), and every failure is a `SpecError`.
Hostile or broken input (an alias bomb, a thousand nested brackets, a huge file, a python tag)
is refused up front with the limit it broke, never a hang, a MemoryError or a RecursionError.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import deque
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

# Limits far above any real claim (5 KB, 6 levels deep, 200 nodes) and below what hurts: pyyaml
# is pure Python (about 20 us a node, 0.3 s a MiB), its composer recurses once per level, and
# aliases can multiply a 500-byte file into billions of nodes.
MAX_FILE_BYTES = 1 << 20  # 1 MiB, checked on the raw bytes before parsing
MAX_DEPTH = 50  # nested mappings/lists, counted after alias expansion
MAX_NODES = 10_000  # keys, values and list items, counted after alias expansion

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a claim file."""

    file: str
    line: int | None
    path: str  # dotted field path, "" for the whole file
    message: str

    def render(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field_part = f" {self.path}:" if self.path else ""
        return f"{where}:{field_part} {self.message}"


class SpecError(Exception):
    """A claim that cannot be run, with every problem found; the CLI prints it and exits 2."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(p.render() for p in problems))


@dataclass
class LineMap:
    """Line number (1-based) of each key or list item, by its path from the document root."""

    lines: dict[Path_, int] = field(default_factory=dict)

    def line_of(self, path: Path_) -> int | None:
        """The line of the deepest prefix of `path` that the document defines."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return None

    def has(self, path: Path_) -> bool:
        return path in self.lines


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_<>-]+")


def dotted(path: Path_) -> str:
    """`a.b[0].c`; a key that is not a plain name is shown quoted (`scales['a b\\n']`), so a
    problem stays one line whatever a file's keys hold."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _build(node: yaml.Node, path: Path_, lines: LineMap, file: str,
           _open: frozenset[int] = frozenset()) -> Any:
    if id(node) in _open:  # an alias inside its own anchor: `a: &x [*x]`
        raise SpecError([Problem(file, node.start_mark.line + 1, dotted(path),
                                 "recursive alias (an anchor used inside itself)")])
    lines.lines.setdefault(path, node.start_mark.line + 1)
    _open = _open | {id(node)}
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        merged: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                _merge_into(merged, value_node, path, lines, file, _open)
                continue
            key = _build(key_node, (*path, "<key>"), LineMap(), file)
            if not isinstance(key, str | int | float | bool):
                raise SpecError([Problem(file, key_node.start_mark.line + 1, dotted(path),
                                         _bad_key(key, key_node))])
            key = str(key) if not isinstance(key, str) else key
            if key in out:
                raise SpecError([Problem(
                    file, key_node.start_mark.line + 1, dotted((*path, key)),
                    f"duplicate key {key!r} (first defined on line "
                    f"{lines.lines[(*path, key)]}); each key may appear once")])
            lines.lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, (*path, key), lines, file, _open)
        return {**{k: v for k, v in merged.items() if k not in out}, **out}
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*path, i), lines, file, _open)
                for i, item in enumerate(node.value)]
    return _scalar(node)


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _merge_into(merged: dict[Any, Any], value_node: yaml.Node, path: Path_, lines: LineMap,
                file: str, _open: frozenset[int]) -> None:
    """A YAML merge key (`<<: *anchor` or `<<: [*a, *b]`): the anchored mappings' keys, shallow,
    under the keys written in the mapping itself; earlier mappings in a list win. Their lines
    are where the anchored values are written."""
    sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
    for source in reversed(sources):
        if not isinstance(source, yaml.MappingNode):
            raise SpecError([Problem(file, source.start_mark.line + 1, dotted(path),
                                     "'<<' (YAML merge) takes a mapping or a list of mappings")])
        probe = LineMap()
        merged.update(_build(source, path, probe, file, _open))
        for key_path, line in probe.lines.items():
            lines.lines.setdefault(key_path, line)


def _bad_key(key: Any, node: yaml.Node) -> str:
    """Why a key that is not a name, number or boolean is refused, saying what the key was."""
    if key is None:
        return ("a null key (~, null or empty) is not allowed: mapping keys must be plain "
                "scalars (a name, number or boolean); quote it ('~') to mean the text")
    if isinstance(key, date):  # YAML 1.1 reads 2024-01-31 as a date
        return (f"the key {node.value} is read as a date: mapping keys must be plain scalars "
                f"(a name, number or boolean); quote it ('{node.value}') to use it as a name")
    kind = {dict: "a mapping", list: "a list"}.get(type(key), f"a {type(key).__name__}")
    shown = repr(key) if len(repr(key)) <= 60 else repr(key)[:57] + "..."
    return (f"{kind} used as a key ({shown}): mapping keys must be plain scalars "
            f"(a name, number or boolean)")


_SCALAR_LOADER = yaml.SafeLoader("")
_STD = "tag:yaml.org,2002:"
_VALUE_TAG = _STD + "value"
# tags a claim may write out: the core schema's; '!' is YAML's "resolve as usual" tag
_EXPLICIT_TAGS = frozenset({"!", *(_STD + t for t in ("str", "int", "float", "bool", "null",
                                                     "map", "seq"))})


def _scalar(node: yaml.Node) -> Any:
    if node.tag in (_MERGE_TAG, _VALUE_TAG):  # a plain `<<` or `=` that is not a merge key:
        return node.value  # text (YAML 1.1 resolves them to tags SafeLoader cannot build)
    return _SCALAR_LOADER.construct_object(node, deep=True)


class _Position:
    """Where the event stream is in the document, as a field path: each open collection's
    current key (a mapping's last scalar key, while its value is read) or index."""

    def __init__(self) -> None:
        self.stack: list[list[Any]] = []  # [is_mapping, at_key, key or index]

    def path(self) -> Path_:
        out: list[str | int] = []
        for is_mapping, at_key, where in self.stack:
            if is_mapping and at_key:
                break  # a key being read: the path is its mapping's
            out.append(where if not is_mapping else str(where))
        return tuple(out)

    def node_done(self, value: Any = None) -> None:
        """A node (scalar, alias or whole collection) finished inside the open collection."""
        if not self.stack:
            return
        top = self.stack[-1]
        if not top[0]:
            top[2] += 1
        elif top[1]:
            top[1], top[2] = False, "?" if value is None else value
        else:
            top[1] = True

    def open(self, is_mapping: bool) -> None:
        self.stack.append([is_mapping, True, None] if is_mapping else [False, False, 0])

    def close(self) -> None:
        self.stack.pop()
        self.node_done()


def _limit(file: str, mark: yaml.Mark, message: str, here: Path_ = ()) -> SpecError:
    return SpecError([Problem(file, mark.line + 1, dotted(here), message)])


def _checked_events(text: str, file: str) -> list[yaml.Event]:
    """pyyaml's events, refusing non-core tags and too-deep or too-big documents. The event
    stream neither recurses nor expands aliases; each anchor's expanded size and height are
    summed as its events go by, so an alias bomb is refused at the alias that crosses MAX_NODES."""
    events: list[yaml.Event] = []
    expanded: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, height) once expanded
    open_: list[list[Any]] = []  # the collections being read: [anchor, nodes, height]
    total = 0
    where = _Position()
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        events.append(event)
        here = where.path()  # the node this event is (or starts), for a problem found in it
        if isinstance(event, yaml.CollectionStartEvent):
            where.open(isinstance(event, yaml.MappingStartEvent))
        elif isinstance(event, yaml.CollectionEndEvent):
            where.close()
        elif isinstance(event, yaml.ScalarEvent):
            where.node_done(event.value)
        elif isinstance(event, yaml.AliasEvent):
            where.node_done()
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, nodes, height = open_.pop()
            if anchor is not None:
                expanded[anchor] = (nodes, height + 1)
            if open_:
                open_[-1][1] += nodes
                open_[-1][2] = max(open_[-1][2], height + 1)
            continue
        if isinstance(event, yaml.AliasEvent):
            # an anchor still open is used inside itself: _build reports that
            nodes, height = expanded.get(event.anchor, (1, 0))
            if len(open_) + height > MAX_DEPTH:
                raise _limit(file, event.start_mark,
                             f"alias *{event.anchor} nests its anchor's value more than "
                             f"{MAX_DEPTH} levels deep (MAX_DEPTH = {MAX_DEPTH}); a claim "
                             f"needs fewer than 10", here)
            if total + nodes > MAX_NODES:
                raise _limit(file, event.start_mark,
                             f"alias *{event.anchor} (a copy of {nodes:,} nodes) takes the "
                             f"document past {MAX_NODES:,} nodes once aliases are expanded "
                             f"(MAX_NODES = {MAX_NODES}); a claim needs a few hundred", here)
        elif isinstance(event, yaml.NodeEvent):  # a scalar or the start of a collection
            if event.tag is not None and event.tag not in _EXPLICIT_TAGS:
                shown = "!!" + event.tag[len(_STD):] if event.tag.startswith(_STD) else event.tag
                raise _limit(file, event.start_mark,
                             f"YAML tag {shown!r} is not allowed (unsupported YAML value): "
                             f"claims are plain data (mappings, lists, strings, numbers, "
                             f"booleans, null)", here)
            nodes, height = 1, 0
            if total + 1 > MAX_NODES:
                raise _limit(file, event.start_mark,
                             f"more than {MAX_NODES:,} nodes (MAX_NODES = {MAX_NODES}); "
                             f"a claim needs a few hundred", here)
            if isinstance(event, yaml.CollectionStartEvent):
                if len(open_) + 1 > MAX_DEPTH:
                    raise _limit(file, event.start_mark,
                                 f"mappings/lists nested more than {MAX_DEPTH} levels deep "
                                 f"(MAX_DEPTH = {MAX_DEPTH}); a claim needs fewer than 10", here)
                open_.append([event.anchor, 1, 0])
                total += 1
                continue
            if event.anchor is not None:
                expanded[event.anchor] = (1, 0)
        else:  # stream and document boundaries
            continue
        total += nodes
        if open_:
            open_[-1][1] += nodes
            open_[-1][2] = max(open_[-1][2], height)
    return events


class _Replay(yaml.composer.Composer, yaml.resolver.Resolver):
    """pyyaml's composer (as in SafeLoader) fed the events already read and checked, so the
    text is parsed once and what is composed is exactly what was checked."""

    def __init__(self, events: list[yaml.Event]) -> None:
        yaml.composer.Composer.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._events = deque(events)

    def check_event(self, *choices: type[yaml.Event]) -> bool:
        return bool(self._events) and (not choices or isinstance(self._events[0], choices))

    def peek_event(self) -> yaml.Event:
        return self._events[0]

    def get_event(self) -> yaml.Event:
        return self._events.popleft()


def _check_size(raw: bytes, size: int, file: str) -> None:
    """Refuse a file over MAX_FILE_BYTES before parsing it; `raw` holds at least its first
    MAX_FILE_BYTES + 1 bytes, and the line named is where the limit is passed."""
    if max(size, len(raw)) <= MAX_FILE_BYTES:
        return
    line = raw[:MAX_FILE_BYTES].count(b"\n") + 1
    how_big = f"{size:,} bytes" if size > MAX_FILE_BYTES else "over the limit"
    raise SpecError([Problem(file, line, "",
                             f"file too large ({how_big}): claims are limited to "
                             f"{MAX_FILE_BYTES:,} bytes (MAX_FILE_BYTES, "
                             f"{MAX_FILE_BYTES / 2**20:g} MiB; a claim is a few KB); the limit "
                             f"is reached on this line")])


def _check_characters(text: str, file: str) -> None:
    """A character YAML forbids (NUL, other control characters), by line and column: pyyaml's
    own error gives only an offset into the whole text."""
    found = yaml.reader.Reader.NON_PRINTABLE.search(text)
    if found is None:
        return
    at, char = found.start(), found.group()
    line, column = text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1
    name = {"\0": " (NUL)", "\x7f": " (DEL)"}.get(char, "")
    kind = "control character" if unicodedata.category(char) == "Cc" else "character"
    raise SpecError([Problem(file, line, "",
                             f"{kind} U+{ord(char):04X}{name} at column {column} is not allowed "
                             f"in YAML; delete it (a claim file is plain text)")])


# scanner contexts whose context mark, not the problem mark, is the line to fix
_STARTS_AT_CONTEXT = {
    "while scanning a simple key": "a key with no ':' after it (expected 'key: value')",
    "while scanning a quoted scalar": "a quoted string that is never closed",
}


def _syntax_problem(exc: yaml.MarkedYAMLError) -> str:
    """pyyaml's problem, said in terms of what to fix where pyyaml's own words are parser-speak."""
    problem, context, start = exc.problem or str(exc), exc.context or "", exc.context_mark
    if context in _STARTS_AT_CONTEXT:
        return f"{_STARTS_AT_CONTEXT[context]} ({problem})"
    if start is not None and context.startswith("while parsing a flow "):
        what = context.removeprefix("while parsing a ")
        return f"{problem} (the {what} opened on line {start.line + 1} is not closed)"
    if start is not None and problem.startswith("expected <block end>"):
        return (f"this line does not fit the indentation of the mapping that starts on line "
                f"{start.line + 1}")
    return problem


def load_yaml_text(text: str, file: str) -> tuple[Any, LineMap]:
    """Parse YAML text into plain Python data plus the line of every path."""
    raw = text.encode("utf-8", "surrogatepass")
    _check_size(raw, len(raw), file)
    _check_characters(text, file)
    try:
        # checked before composing: the composer recurses once per level
        node = _Replay(_checked_events(text, file)).get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        text_lines = text.splitlines()
        bad_line = text_lines[mark.line] if mark and mark.line < len(text_lines) else ""
        if "\t" in bad_line[: len(bad_line) - len(bad_line.lstrip())] or "'\\t'" in str(exc):
            message = "tab character used for indentation; YAML needs spaces"
        else:
            message = f"YAML syntax error: {_syntax_problem(exc)}"
            if exc.context in _STARTS_AT_CONTEXT and exc.context_mark:
                line = exc.context_mark.line + 1  # where the unfinished token starts
        raise SpecError([Problem(file, line, "", message)]) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(file, None, "", f"YAML error: {exc}")]) from None
    if node is None:
        raise SpecError([Problem(file, None, "", "the file is empty; expected a claim mapping")])
    lines = LineMap()
    try:
        data = _build(node, (), lines, file)
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        raise SpecError([Problem(file, mark.line + 1 if mark else None, "",
                                 f"unsupported YAML value: {exc.problem}")]) from None
    return data, lines


def load_yaml_file(path: Path) -> tuple[Any, LineMap]:
    """Read a claim file; unreadable, non-UTF-8 or empty files are SpecErrors, not tracebacks."""
    file = str(path)
    try:
        with path.open("rb") as fh:  # never more than the limit into memory
            raw, size = fh.read(MAX_FILE_BYTES + 1), os.fstat(fh.fileno()).st_size
    except FileNotFoundError:
        raise SpecError([Problem(file, None, "", "no such file")]) from None
    except IsADirectoryError:
        raise SpecError([Problem(file, None, "", "is a directory, expected a YAML file")]) from None
    except OSError as exc:
        raise SpecError([Problem(file, None, "", f"cannot read: {exc.strerror}")]) from None
    _check_size(raw, size, file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError([Problem(file, line, "",
                                 f"not valid UTF-8 (byte {raw[exc.start]:#04x} at offset "
                                 f"{exc.start}); save the file as UTF-8")]) from None
    return load_yaml_text(text, file)
