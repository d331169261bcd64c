"""The base of every spec model, and the field types they share: unknown keys are errors, never
silently ignored, and a number or a name is what it says it is (bounds:
`grokverify.claim.limits`)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Iterable
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, AllowInfNan, BaseModel, ConfigDict, Field, Strict

from grokverify.claim.limits import (
    ID_MAX,
    ID_PATTERN,
    ID_WORDS,
    MAX_RNG_SEED,
    NAME_MAX,
    NAME_PATTERN,
    NAME_WORDS,
)
from grokverify.kinds import names_listed

# An integer written as one: YAML's true/false or 3.0 are refused, not read as 1 or 3.
Int = Annotated[int, Strict()]
# A finite number written as one: an integer is taken (lr: 1), YAML's yes/on/true and a quoted
# "0.1" are refused (not read as 1.0 and 0.1), and so are .inf, .nan and 1e400 (which YAML reads
# as infinite): a non-finite setting trains, then breaks the store's JSON or the statistics.
Float = Annotated[float, Strict(), AllowInfNan(False)]
# A seed of a random generator given in a claim (numpy's and torch's take 0 .. 2³² - 1 alike).
RngSeed = Annotated[Int, Field(ge=0, le=MAX_RNG_SEED)]


def _name_check(pattern: re.Pattern[str], words: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"expected {words}")
        return value
    return AfterValidator(check)


# A claim id (store keys, report folders and file names are made of it).
Id = Annotated[str, _name_check(ID_PATTERN, ID_WORDS),
               Field(json_schema_extra={"pattern": f"^{ID_PATTERN.pattern}$", "maxLength": ID_MAX})]
# An arm, scale or family member name (report tables and headings are made of it).
Name = Annotated[str, _name_check(NAME_PATTERN, NAME_WORDS),
                 Field(json_schema_extra={"pattern": f"^{NAME_PATTERN.pattern}$",
                                          "maxLength": NAME_MAX})]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # fields added to a kind after records of it were stored: left out of its canonical JSON
    # while at their default, so that adding a setting changes no existing store key
    key_defaults: ClassVar[frozenset[str]] = frozenset()

    def key_dump(self) -> dict[str, Any]:
        """Every field as JSON data, defaults included but `key_defaults` at their default: what
        store keys and a model's random streams are keyed by."""
        return _key_dump(self, self.model_dump(mode="json"))

    def canonical(self) -> str:
        """Stable JSON of `key_dump`: the basis of content hashes."""
        return json.dumps(self.key_dump(), sort_keys=True, separators=(",", ":"))


def _key_dump(spec: Any, dumped: Any) -> Any:
    """`dumped` (a model_dump of `spec`) without each model's `key_defaults` at their default."""
    if isinstance(spec, StrictModel) and isinstance(dumped, dict):
        fields = type(spec).model_fields
        return {k: _key_dump(getattr(spec, k, None), v) for k, v in dumped.items()
                if not (k in spec.key_defaults and getattr(spec, k) == fields[k].default)}
    if isinstance(spec, (list, tuple)) and isinstance(dumped, list):
        return [_key_dump(s, d) for s, d in zip(spec, dumped, strict=True)]
    if isinstance(spec, dict) and isinstance(dumped, dict):
        return {k: _key_dump(spec.get(k), v) for k, v in dumped.items()}
    return dumped


def kind_of(value: object) -> str:
    """What a YAML value is, with its article, for refusals: "a mapping", "an int", "null"."""
    word = {dict: "mapping", list: "list", str: "string", type(None): "null"}.get(
        type(value), type(value).__name__)
    return word if word == "null" else f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """The " (did you mean 'x'?)" naming the closest of `choices`; "" when none is close."""
    hint = difflib.get_close_matches(value, list(choices), n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


def known(value: str, registry: Collection[str], what: str) -> str:
    """`value` if `registry` has it; else a refusal listing the known names."""
    if value not in registry:
        raise ValueError(f"unknown {what} {value!r}{did_you_mean(value, registry)}; known: "
                         f"{names_listed(registry)}")
    return value
