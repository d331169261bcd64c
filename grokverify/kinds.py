"""One way to register every kind a claim can name: a spec class, registered with the
"module:attribute" path of its implementation (docs/extending.md), by this package or by an
installed plugin (entry-point group `grokverify.plugins`, loaded with the first registry read).
Torch-free: an implementation is imported where it first runs, so loading a claim never imports
torch."""

from __future__ import annotations

import importlib
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, Field

PLUGIN_GROUP = "grokverify.plugins"
PLUGIN_API = 1  # what a plugin module declares as GROKVERIFY_PLUGIN_API to be loaded

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
        self._plugins: dict[str, str] = {}  # name -> the plugin that registered it
        _REGISTRIES.append(self)

    @property
    def specs(self) -> dict[str, S]:
        """name -> spec class: the built-in ones (registered by `home`) and the plugins'."""
        importlib.import_module(self.home)
        plugins()
        return self._specs

    def plugin_of(self, name: str) -> str | None:
        """The plugin that registered `name`; None for a built-in kind."""
        return self._plugins.get(name)

    def _drop(self, plugin: str) -> None:
        """Forget what a plugin registered (it failed to load, or is incompatible)."""
        for name in [n for n, p in self._plugins.items() if p == plugin]:
            for table in (self._specs, self._paths, self._loaded, self._plugins):
                table.pop(name, None)

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
            if _LOADING and cls.__module__.partition(".")[0] == _LOADING[-1][1]:
                self._plugins[name] = _LOADING[-1][0]
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


_REGISTRIES: list[Kind[Any]] = []
# (plugin, its top-level package) while its module is imported: a class registered from that
# package is the plugin's (the package's own kinds may be registered then too, by imports)
_LOADING: list[tuple[str, str]] = []


@dataclass(frozen=True)
class Plugin:
    """An installed plugin: its entry point, distribution, declared results version (part of
    the store key of every record that uses it), the kinds it registered, or why it cannot be
    used."""

    name: str
    module: str
    distribution: str | None
    version: str | None
    results_version: str | None
    kinds: tuple[str, ...]
    error: str | None


_PLUGINS: dict[str, Plugin] | None = None


def plugins() -> dict[str, Plugin]:
    """Every installed plugin by name, each imported once (docs/extending.md, "Plugins"); a
    plugin that fails to import or declares another plugin API is kept with its error and
    registers nothing."""
    global _PLUGINS
    if _PLUGINS is None:
        _PLUGINS = {}
        for entry in sorted(metadata.entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
            _PLUGINS[entry.name] = _load_plugin(entry)
    return _PLUGINS


def _load_plugin(entry: metadata.EntryPoint) -> Plugin:
    dist = getattr(entry, "dist", None)
    distribution, version = (dist.name, dist.version) if dist is not None else (None, None)
    module_name = entry.value.partition(":")[0]
    error, module = None, None
    _LOADING.append((entry.name, module_name.partition(".")[0]))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a broken plugin is reported, never fatal to the others
        error = f"cannot import {module_name}: {type(exc).__name__}: {exc}"
    finally:
        _LOADING.pop()
    api = getattr(module, "GROKVERIFY_PLUGIN_API", None)
    results = getattr(module, "RESULTS_VERSION", None)
    if error is None and api != PLUGIN_API:
        error = (f"written for plugin API {api!r}, this grokverify loads API {PLUGIN_API}: "
                 f"install a release of {distribution or entry.name} made for it")
    elif error is None and not (isinstance(results, str) and results):
        error = f"{module_name} declares no RESULTS_VERSION (a non-empty string)"
    kinds = tuple(f"{k.what} {n}" for k in _REGISTRIES for n, p in k._plugins.items()
                  if p == entry.name)
    if error is not None:
        for registry in _REGISTRIES:
            registry._drop(entry.name)
        kinds = ()
    return Plugin(entry.name, module_name, distribution, version,
                  results if error is None else None, kinds, error)


def names_listed(registry: Any, quote: Callable[[str], str] = str) -> str:
    """A registry's names for a refusal: the built-in ones sorted, then any plugin's, apart
    (so a message lists the same built-ins whatever is installed)."""
    plugin_of = getattr(registry, "plugin_of", lambda name: None)
    own = [quote(n) for n in sorted(registry) if not plugin_of(n)]
    extra = [quote(n) for n in sorted(registry) if plugin_of(n)]
    return ", ".join(own) + (f" (from plugins: {', '.join(extra)})" if extra else "")


def kinds_used(spec: Any) -> Iterator[tuple[Kind[Any], str]]:
    """Every registered kind (registry, name) a spec object names, searched through its
    fields, lists and mappings."""
    if isinstance(spec, BaseModel):
        for registry in _REGISTRIES:
            name = getattr(spec, registry.tag, None)
            cls = registry._specs.get(name) if isinstance(name, str) else None
            # a spec object of the kind, or a field naming a kind that is no pydantic model
            # (a task's `op` and `split` name plain classes)
            if cls is not None and (cls is type(spec) or not issubclass(cls, BaseModel)):
                yield registry, str(name)
        for field in type(spec).model_fields:
            yield from kinds_used(getattr(spec, field))
    elif isinstance(spec, (list, tuple)):
        for item in spec:
            yield from kinds_used(item)
    elif isinstance(spec, dict):
        for item in spec.values():
            yield from kinds_used(item)


def plugins_used(spec: Any) -> dict[str, str]:
    """Plugin name -> its results version, for each plugin whose kinds `spec` names."""
    names = {p for registry, name in kinds_used(spec) if (p := registry.plugin_of(name))}
    installed = plugins()
    return {n: str(installed[n].results_version) for n in sorted(names)}


TASKS: Kind[type] = Kind("task operation", "op", "grokverify.claim.tasks")
SPLITS: Kind[type] = Kind("split strategy", "split", "grokverify.claim.tasks")
MODELS: Kind[type] = Kind("model kind", "kind", "grokverify.claim.models")
PROBES: Kind[type] = Kind("probe", "name", "grokverify.claim.probes")
INTERVENTIONS: Kind[type] = Kind("intervention", "name", "grokverify.claim.interventions")
METRICS: Kind[type] = Kind("metric", "name", "grokverify.claim.metrics")
CRITERIA: Kind[type] = Kind("criterion", "name", "grokverify.claim.criteria")
CHECKS: Kind[type] = Kind("validity check", "kind", "grokverify.claim.checks")
ANSWER_RULES: Kind[type] = Kind("answer rule", "rule", "grokverify.claim.paper")
