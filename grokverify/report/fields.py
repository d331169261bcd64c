"""The claim-file reference, docs/claims.md, written from the schema's pydantic models and the
kinds' registries so that it cannot go stale (`grokverify schema --format markdown`)."""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from grokverify.claim.models import ROLE_WORDS
from grokverify.kinds import (
    CHECKS,
    CRITERIA,
    INTERVENTIONS,
    METRICS,
    MODELS,
    PROBES,
    SPLITS,
    TASKS,
    Kind,
)

REGENERATE = "grokverify schema --format markdown > docs/claims.md"

# (section title, kind, the field a claim names it by), in the order a claim file is written
KIND_SECTIONS: tuple[tuple[str, Kind[type], str], ...] = (
    ("Task operations", TASKS, "base.task.op"),
    ("Split strategies", SPLITS, "base.task.split"),
    ("Models", MODELS, "base.model.kind"),
    ("Probes", PROBES, "base.probes[].name"),
    ("Interventions", INTERVENTIONS, "base.interventions[].name"),
    ("Metrics", METRICS, "metric.name"),
    ("Criteria", CRITERIA, "criterion.name"),
    ("Validity checks", CHECKS, "checks[].kind"),
)

INTRO = f"""\
# Claim file reference

Generated from the schema (`grokverify/claim/`) and the registries of `grokverify/kinds.py`;
do not edit it by hand: `{REGENERATE}` rewrites it, and `tests/test_docs.py` fails
when it differs. A minimal claim is in README.md, every shipped one in `claims/`;
`grokverify schema` prints the same schema as JSON Schema.

Every section is strict: an unknown key is an error with a "did you mean", never ignored.
Numbers are written as numbers (`yes`, `on` and `"0.1"` are refused), and the bounds below are
checked when the claim loads (`grokverify/claim/limits.py`).

An arm at a scale is resolved in this order: `base`, then `scales.<s>.overrides`, then the
family member (if any), then `arms.<a>`, then `scales.<s>.arms.<a>`, each a partial experiment
deep-merged into the last (lists replace). A model whose `kind` changes is replaced, not merged;
an optimizer whose `name` changes keeps the shared settings (lr, weight decay, embedding
multipliers) and drops the old optimizer's own (`betas`, `eps`, `momentum`, `nesterov`). Every
scale × member × arm is resolved and validated when the claim loads, its split included. YAML
anchors, aliases and merge keys (`<<: *shared`, shallow) work as in YAML; an error in a shared
value names the line where it is written.
"""


def markdown() -> str:
    """The whole reference: the claim's sections in the order its fields name them, then each
    kind's registered names."""
    from grokverify.claim.schema import Claim

    lines = [INTRO]
    done: set[type] = set()
    for model in _nested(Claim, done):
        lines += _model_section(model, "##")
    for title, kind, named_by in KIND_SECTIONS:
        lines += _kind_section(title, kind, named_by, done)
    return "\n".join(lines).rstrip() + "\n"


def _nested(model: type[BaseModel], done: set[type]) -> Iterator[type[BaseModel]]:
    """`model`, then depth first every model its fields name that no section shows yet (the
    kinds' spec classes have their own sections)."""
    done.add(model)
    yield model
    for inner in _models_in(model):
        if inner not in done and _kind_of(inner) is None:
            yield from _nested(inner, done)


def _model_section(model: type[BaseModel], level: str) -> list[str]:
    doc = _doc(model)
    return [f"{level} {model.__name__}", "", *([doc, ""] if doc else []), *_table(model)]


def _kind_section(title: str, kind: Kind[type], named_by: str, done: set[type]) -> list[str]:
    """Every built-in name: where it is implemented, its docstring, what it reads, its fields;
    then the models its fields name that no section has shown yet (a plugin's kinds are its
    own to document)."""
    builtin = {n: spec for n, spec in kind.items() if kind.plugin_of(n) is None}
    out = [f"## {title}", "", f"`{named_by}`: one of {', '.join(f'`{n}`' for n in builtin)} "
           "(and the kinds of installed plugins: `grokverify plugins`).", ""]
    nested: list[type[BaseModel]] = []
    for name, spec in builtin.items():
        doc, facts = _doc(spec), _facts(kind, name)
        out += [f"### `{name}`", "", f"Implementation: `{kind.path(name)}`.", ""]
        out += [*([doc, ""] if doc else []), *([facts, ""] if facts else [])]
        if issubclass(spec, BaseModel):
            out += _table(spec, skip=kind.tag)
            for inner in _models_in(spec):
                if inner not in done and _kind_of(inner) is None:
                    nested += _nested(inner, done)
    for model in nested:
        out += _model_section(model, "###")
    return out


def _facts(kind: Kind[type], name: str) -> str:
    """What a spec class says of itself besides its fields (class attributes and curves)."""
    spec: Any = kind[name]
    facts = []
    if kind is METRICS:
        facts.append(f"kind: {spec.kind}")
    if kind is CRITERIA:
        facts += [f"takes {' or '.join(spec.accepts)} metrics", *filter(None, [spec.kinds_note])]
    if kind is MODELS:
        roles = ", ".join(f"{r} ({ROLE_WORDS[r]})" for r in spec.roles)
        facts += [f"reads {_INPUTS[spec.inputs]}", f"roles: {roles or 'none'}"]
    if kind is PROBES or kind is INTERVENTIONS:
        facts.append(f"works on {' or '.join(_INPUTS[i] for i in spec.inputs)}")
    if kind is PROBES:
        facts.append(f"reads the {_READS[spec.reads]}")
    if kind is PROBES or kind is INTERVENTIONS:
        try:
            curves = spec.model_construct(**{kind.tag: name}).curves()
        except Exception:  # curves that depend on a setting without a default
            curves = []
        facts += [f"curves at its defaults: {', '.join(curves)}"] if curves else []
    if kind is INTERVENTIONS and spec.roles:
        facts.append(f"needs roles: {', '.join(spec.roles)}")
    text = "; ".join(facts)
    return f"{text[:1].upper()}{text[1:]}." if text else ""


_INPUTS = {"pairs": "operand pairs", "images": "images"}
_READS = {"params": "parameters (after `step` updates)",
          "grads": "gradient of the step's minibatch loss",
          "update": "update the step makes to the parameters"}


def _doc(cls: type) -> str:
    return inspect.cleandoc(cls.__dict__.get("__doc__") or "")


def _table(model: type[BaseModel], skip: str = "") -> list[str]:
    rows = [(name, f) for name, f in model.model_fields.items() if name != skip]
    if not rows:
        return ["No settings.", ""]
    out = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, f in rows:
        cells = (f"`{name}`", _type(f.annotation, f.metadata, f.json_schema_extra),
                 _default(f), f.description or "")
        out.append("| " + " | ".join(" ".join(c.split()).replace("|", "\\|") for c in cells)
                   + " |")
    return [*out, ""]


def _default(f: FieldInfo) -> str:
    if f.default_factory is not None:
        value = f.default_factory()  # type: ignore[call-arg]
    elif f.default is PydanticUndefined:
        return "required"
    else:
        value = f.default
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _type(tp: Any, metadata: Sequence[Any] = (), extra: Any = None) -> str:
    """A type as YAML writes it, with its bounds and pattern."""
    limits = _limits(metadata, extra)
    return f"{_bare(tp)} ({limits})" if limits else _bare(tp)


def _bare(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        return _type(args[0], list(args[1:]))
    if origin in (Union, types.UnionType):
        kind = _kind_of(args)
        if kind is not None:
            return f"[{kind[1].what}](#{kind[0].lower().replace(' ', '-')})"
        return " | ".join(_bare(a) for a in args)
    if origin is Literal:
        return " | ".join(f"`{json.dumps(a)}`" for a in args)
    if origin is list:
        return f"list of {_bare(args[0])}"
    if origin is tuple:
        return f"[{', '.join(_bare(a) for a in args)}]"
    if origin is dict:
        return f"mapping {_bare(args[0])} → {_bare(args[1])}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return f"[{tp.__name__}](#{tp.__name__.lower()})"
    return {type(None): "null", int: "int", float: "number", str: "string", bool: "bool",
            Any: "any"}.get(tp, getattr(tp, "__name__", str(tp)))


def _kind_of(classes: Any) -> tuple[str, Kind[type]] | None:
    """The kind section whose spec classes these are (a class, or a union's members)."""
    members = classes if isinstance(classes, tuple) else (classes,)
    for title, kind, _ in KIND_SECTIONS:
        specs = set(kind.specs.values())
        if members and all(isinstance(m, type) and m in specs for m in members):
            return title, kind
    return None


_BOUNDS = (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "at least"),
           ("max_length", "at most"))


def _limits(metadata: Sequence[Any], extra: Any = None) -> str:
    """The bounds and pattern that a field's metadata (annotated_types items, or a Field(...)
    inside Annotated[...]) and its JSON Schema extras set."""
    found = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            found.append(_limits(item.metadata, item.json_schema_extra))
        for attr, word in _BOUNDS:
            if (value := getattr(item, attr, None)) is not None:
                found.append(f"{word} {value:g}" if isinstance(value, float) else
                             f"{word} {value}")
        if isinstance(pattern := getattr(item, "pattern", None), str):
            found.append(f"matching `{pattern}`")
    if isinstance(extra, dict) and "pattern" in extra:
        found.append(f"matching `{extra['pattern']}`")
    return ", ".join(f for f in found if f)


def _models_in(model: type[BaseModel]) -> Iterator[type[BaseModel]]:
    """The models its fields' types name, in field order."""
    for f in model.model_fields.values():
        yield from _models_of(f.annotation)


def _models_of(tp: Any) -> Iterator[type[BaseModel]]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        yield tp
    for arg in typing.get_args(tp):
        yield from _models_of(arg)
