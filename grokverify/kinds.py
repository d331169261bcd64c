"""One way to register every kind a claim can name: a spec class, registered with the
"module:attribute" path of its implementation (docs/extending.md). Torch-free: an implementation
is imported where it first runs, so loading a claim never imports torch."""

from __future__ import annotations

import importlib
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, Generic, TypeVar

from pydantic import Field

S = TypeVar("S", bound=type)


class Kind(Mapping[str, S], Generic[S]):
    """The spec classes of one kind by name (a read-only mapping), each with where its
    implementation lives. A spec's name is the value of the kind's `tag`: a Literal field of the
    class, or a class attribute."""

    def __init__(self, what: str, tag: str, home: str) -> None:
        self.what, self.tag, self.home = what, tag, home
        self._specs: dict[str, S] = {}
        self._paths: dict[str, str] = {}
        self._loaded: dict[str, Any] = {}

    @property
    def specs(self) -> dict[str, S]:
        """name -> spec class, the built-in ones (registered by `home`) included."""
        importlib.import_module(self.home)
        return self._specs

    def __getitem__(self, name: str) -> S:
        return self.specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def register(self, implementation: str) -> Callable[[S], S]:
        """Class decorator: register the spec class under its name; a second, different class
        under a taken name is an error (it would change what a claim naming it runs)."""
        module, _, attribute = implementation.partition(":")
        if not module or not attribute:
            raise ValueError(f"{self.what}: implementation {implementation!r} is not "
                             "'module:attribute'")

        def add(cls: S) -> S:
            name = self._name_of(cls)
            if self._specs.get(name, cls) is not cls:
                raise ValueError(f"{self.what} {name!r} is already registered")
            self._specs[name] = cls
            self._paths[name] = implementation
            return cls
        return add

    def _name_of(self, cls: type) -> str:
        field = getattr(cls, "model_fields", {}).get(self.tag)
        if field is not None:
            (name,) = typing.get_args(field.annotation)
        else:
            name = getattr(cls, self.tag)
        if not isinstance(name, str):
            raise TypeError(f"{cls.__name__}: {self.what} name {self.tag!r} must be a string")
        return name

    def implementation(self, name: str) -> Any:
        """The function or class registered for `name`, imported on first use."""
        if name not in self._loaded:
            module, _, attribute = self.path(name).partition(":")
            self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return self._loaded[name]

    def of(self, spec: object) -> Any:
        """The implementation of a spec instance."""
        return self.implementation(getattr(spec, self.tag))

    def path(self, name: str) -> str:
        """Where `name`'s implementation lives, as "module:attribute"."""
        if name not in self.specs:
            raise KeyError(f"unknown {self.what} {name!r}")
        return self._paths[name]

    def union(self) -> Any:
        """The pydantic type of any registered spec, told apart by the tag."""
        return Annotated[typing.Union[tuple(self.specs.values())],  # noqa: UP007
                         Field(discriminator=self.tag)]


TASKS: Kind[type] = Kind("task operation", "op", "grokverify.claim.tasks")
SPLITS: Kind[type] = Kind("split strategy", "split", "grokverify.claim.tasks")
MODELS: Kind[type] = Kind("model kind", "kind", "grokverify.claim.models")
PROBES: Kind[type] = Kind("probe", "name", "grokverify.claim.probes")
INTERVENTIONS: Kind[type] = Kind("intervention", "name", "grokverify.claim.interventions")
METRICS: Kind[type] = Kind("metric", "name", "grokverify.claim.metrics")
CRITERIA: Kind[type] = Kind("criterion", "name", "grokverify.claim.criteria")
CHECKS: Kind[type] = Kind("validity check", "kind", "grokverify.claim.checks")
ANSWER_RULES: Kind[type] = Kind("answer rule", "rule", "grokverify.claim.paper")
