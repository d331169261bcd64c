"""Safe YAML loading that remembers where every key came from, so errors can name the line.

Claims are data: only the SafeLoader's node types are built, duplicate keys are errors (a
silently overwritten key is a silently ignored key), and every failure is a `SpecError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

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


def dotted(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
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
                                         "mapping keys must be plain scalars")])
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


_SCALAR_LOADER = yaml.SafeLoader("")


def _scalar(node: yaml.Node) -> Any:
    return _SCALAR_LOADER.construct_object(node, deep=True)


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
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
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
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SpecError([Problem(file, None, "", "no such file")]) from None
    except IsADirectoryError:
        raise SpecError([Problem(file, None, "", "is a directory, expected a YAML file")]) from None
    except OSError as exc:
        raise SpecError([Problem(file, None, "", f"cannot read: {exc.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError([Problem(file, line, "",
                                 f"not valid UTF-8 (byte {raw[exc.start]:#04x} at offset "
                                 f"{exc.start}); save the file as UTF-8")]) from None
    return load_yaml_text(text, file)
