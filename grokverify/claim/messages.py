"""pydantic's validation errors as problems a user can act on: file, YAML line, field path,
what was expected, and a "did you mean"."""

from __future__ import annotations

import re
import types
import typing
from datetime import date
from typing import Annotated, Any

from pydantic import ValidationError

from grokverify.claim.base import did_you_mean, kind_of
from grokverify.claim.metrics import MetricSpec
from grokverify.claim.yamlio import LineMap, Path_, Problem, dotted
from grokverify.kinds import (
    ANSWER_RULES,
    CHECKS,
    CRITERIA,
    INTERVENTIONS,
    METRICS,
    MODELS,
    PROBES,
    names_listed,
)


def source_of(lines: LineMap, sources: list[Path_], field: Path_) -> Path_:
    """`field` under the first source that writes it (the last source when none does)."""
    for source in sources:
        if lines.has((*source, *field)) or source == sources[-1]:
            return (*source, *field)
    return field


def _data_path(loc: tuple[Any, ...], data: Any) -> Path_:
    """Map a pydantic error location onto the data, dropping discriminator tags."""
    out: list[str | int] = []
    node = data
    for part in loc:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if in_dict or in_list:
            node = node[part]
        elif isinstance(node, dict) and part in (node.get("kind"), node.get("name")):
            continue  # tagged-union branch, not a key of the file
        elif _is_union_tag(part, node):
            continue
        else:
            node = None
        out.append(part)
    return tuple(out)


def _allowed_keys(model: Any, path: Path_, data: Any) -> list[str]:
    """Field names allowed at `path` (for "did you mean"), following discriminated unions."""
    node = data
    for part in path:
        node_next = node.get(part) if isinstance(node, dict) else None
        if typing.get_origin(model) is dict:  # a name -> model mapping, e.g. scales.<name>
            node, model = node_next, _unwrap(typing.get_args(model)[1], node_next)
            continue
        fields = getattr(model, "model_fields", None)
        if fields is None or part not in fields:
            return []
        node = node_next
        model = _unwrap(fields[part].annotation, node)
    fields = getattr(model, "model_fields", None)
    return sorted(fields) if fields else []


def _unwrap(annotation: Any, node: Any) -> Any:
    """The model an annotation stands for at `node` (a tagged union's branch by its tag)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Annotated:
        return _unwrap(args[0], node)
    if args and all(hasattr(a, "model_fields") for a in args if a is not type(None)):
        args = tuple(a for a in args if a is not type(None))
        for arg in args:
            tag = arg.model_fields.get("kind") or arg.model_fields.get("name")
            if tag and isinstance(node, dict) and node.get("kind", node.get("name")) in \
                    typing.get_args(tag.annotation):
                return arg
        return args[0]
    models = [a for a in args if hasattr(a, "model_fields")]
    is_union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    if is_union and len(models) == 1 and isinstance(node, dict):
        return models[0]  # e.g. `int | SeedsSpec` given a mapping
    return annotation


def validation_problems(exc: ValidationError, file: str, lines: LineMap, data: Any, model: Any,
                        prefix: Path_, sources: list[Path_] | None = None) -> list[Problem]:
    """`exc`'s errors for `data` (validated as `model`, found at `prefix`) as problems at their
    lines; with `sources`, each blamed on the most specific override that writes its field."""
    out: list[Problem] = []
    errors = exc.errors()
    paths = [_data_path(err["loc"], data) for err in errors]
    # paths where a union's scalar branch took the value's type but not its value (seeds: 0)
    fits_scalar = {p for e, p in zip(errors, paths, strict=True)
                   if not isinstance(e.get("input"), dict)
                   and not e["type"].endswith(("_type", "_parsing"))}
    for i, (err, path) in enumerate(zip(errors, paths, strict=True)):
        if isinstance(err.get("input"), dict) and err["type"].endswith(("_type", "_parsing")) \
                and any(p[:len(path)] == path for j, p in enumerate(paths) if j != i):
            continue  # a scalar branch of a union given a mapping: the mapping's errors say more
        if err["type"] in _MAPPING_TYPE_ERRORS and path in fits_scalar:
            continue  # the mapping branch of a union given a scalar: the scalar's error says more
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            tag_key = str(err["ctx"]["discriminator"]).strip("'")
            path = (*path, tag_key)  # point at kind/name
            what, registry = _tag_registry(tag_key, path)
            known = names_listed(registry, repr)
            if err["type"] == "union_tag_not_found":
                message = f"required field is missing; one of: {known}"
            else:
                tag = str(err["ctx"]["tag"])
                message = f"unknown {what} {tag!r}{did_you_mean(tag, registry)}; known: {known}"
        elif err["type"] == "extra_forbidden":
            allowed = _allowed_keys(model, path[:-1], data)
            message = f"unknown key {path[-1]!r}{did_you_mean(str(path[-1]), allowed)}"
            message += f"; allowed here: {', '.join(allowed)}" if allowed else ""
        elif err["type"] == "missing":
            message = "required field is missing"
        elif path and path[-1] == _KEY:
            what = _KEY_WORDS.get(str(path[-3]) if len(path) > 2 else "", "key")
            message = f"{what} {_shown(path[-2])}: {err['msg'].removeprefix('Value error, ')}"
        else:
            got = err.get("input")
            message = _MAPPING_WORDS.sub("a mapping", err["msg"].removeprefix("Value error, "))
            if isinstance(got, dict | list):
                message += f" (got {kind_of(got)})" if err["type"].endswith("_type") else ""
            elif repr(got) not in message:
                message += f" (got {_shown(got)})"
            if err["type"] == "string_type" and isinstance(got, int | float | bool | date):
                message += "; YAML read it as a number, boolean or date: put it in quotes"
            if err["type"] in _NUMBER_ERRORS:
                message += _number_hint(got)
        shown_path = (*prefix, *path)
        line = lines.line_of(shown_path)
        if sources:
            shown_path = source_of(lines, sources, path)
            line = lines.line_of(deepest_defined(lines, shown_path))
        if path and path[-1] == _KEY:  # a mapping's key: name the mapping, show the key
            line, shown_path = lines.line_of(shown_path[:-1]), shown_path[:-2]
        out.append(Problem(file, line, dotted(shown_path), message))
    return _merge_alternatives(out)


_KEY = "[key]"  # pydantic's location of a mapping's key (an arm, scale or member name)


_KEY_WORDS = {"arms": "arm name", "scales": "scale name", "members": "family member name"}


_NUMBER_ERRORS = ("int_type", "float_type", "finite_number")


def _shown(value: Any) -> str:
    """repr of a value in a message, cut short (a 300-character id, a 400-digit number)."""
    text = repr(value)
    if len(text) <= 60:
        return text
    unit = "characters" if isinstance(value, str) else "digits"
    return f"{text[:40]}... ({len(str(value))} {unit})"


def _number_hint(got: Any) -> str:
    """What YAML made of a value written where a number belongs, and how to write it."""
    if isinstance(got, bool):
        return ("; YAML reads an unquoted yes/no, on/off or true/false as a boolean: write a "
                "number")
    if isinstance(got, str):
        try:
            float(got)
        except ValueError:
            return ""
        return "; YAML reads a quoted number as a string: remove the quotes"
    if isinstance(got, float):
        return "; YAML's .inf and .nan, and numbers too large for a float (1e400), are refused"
    return ""


_BY_FIELD = {"probes": PROBES, "interventions": INTERVENTIONS, "metric": METRICS,
             "checks": CHECKS}


def _tag_registry(tag_key: str, path: Path_) -> tuple[str, Any]:
    """What a tagged union's tag names, and the names it may take: by the field the path runs
    through (a probe, an intervention, a metric: a criterion's x and y too), else by the tag
    (a model's kind, a criterion's name)."""
    metric_fields = {key for cls in CRITERIA.specs.values()
                     for key, info in cls.model_fields.items()
                     if any(isinstance(a, type) and issubclass(a, MetricSpec)
                            for a in typing.get_args(info.annotation))}
    for part in reversed(path):
        if isinstance(part, str) and (part in _BY_FIELD or part in metric_fields):
            kind = _BY_FIELD.get(part, METRICS)
            return kind.what, kind
    kind = {"kind": MODELS, "name": CRITERIA, "rule": ANSWER_RULES}.get(tag_key)
    return (kind.what, kind) if kind else (tag_key, {})


_MAPPING_TYPE_ERRORS = ("model_type", "dict_type", "model_attributes_type")


_MAPPING_WORDS = re.compile(r"a valid dictionary or object to extract fields from|"
                            r"a valid dictionary( or instance of \w+)?")


def _merge_alternatives(problems: list[Problem]) -> list[Problem]:
    """A value that fits no branch of a union gets one problem listing each branch's complaint."""
    merged: dict[tuple[int | None, str], Problem] = {}
    for p in problems:
        key = (p.line, p.path)
        if key in merged:
            first = merged[key]
            merged[key] = Problem(p.file, p.line, p.path, f"{first.message}; or: {p.message}")
        else:
            merged[key] = p
    return list(merged.values())


_UNION_TAG = re.compile(r"^(int|float|str|bool|list\[.*|dict\[.*|[A-Z]\w*|[a-z]+-[a-z-]+(\[.*)?)$")


def _is_union_tag(part: Any, node: Any) -> bool:
    """pydantic names the branch of a non-discriminated union in the error location
    ('constrained-int', 'function-after[...]', 'SeedsSpec'); such parts are not keys."""
    return isinstance(part, str) and not (isinstance(node, dict) and part in node) and bool(
        _UNION_TAG.match(part))


def deepest_defined(lines: LineMap, path: Path_) -> Path_:
    """The longest prefix of `path` the file writes (a problem's line when nobody wrote the
    field itself)."""
    for end in range(len(path), 0, -1):
        if lines.has(path[:end]):
            return path[:end]
    return ()
