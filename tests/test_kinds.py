"""One registry idiom (grokverify.kinds): every registered name leads to its spec class and to
an implementation that imports; a name is taken once; probes return the curves they declare."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine.loop import train_seeds
from grokverify.kinds import (
    _LOADING,
    _REGISTRIES,
    CRITERIA,
    INTERVENTIONS,
    METRICS,
    MODELS,
    PLUGIN_GROUP,
    PROBES,
    SPLITS,
    TASKS,
    Kind,
    Plugin,
    _load_plugin,
    names_listed,
)

ALL = {"task operation": TASKS, "split strategy": SPLITS, "model kind": MODELS, "probe": PROBES,
       "intervention": INTERVENTIONS, "metric": METRICS, "criterion": CRITERIA}


@pytest.mark.parametrize("what", sorted(ALL))
def test_every_name_has_its_spec_and_an_implementation_that_imports(what: str) -> None:
    kind = ALL[what]
    assert kind.what == what and len(kind) > 0
    for name, spec in kind.items():
        assert kind._name_of(spec) == name
        assert callable(kind.implementation(name)), kind.path(name)


def test_a_taken_name_is_refused_and_the_same_class_again_is_harmless() -> None:
    kind: Kind[type] = Kind("thing", "name", "grokverify.kinds")

    class First:
        name = "a"

    class Second:
        name = "a"
    register = kind.register("grokverify.kinds:Kind")
    assert register(First) is First and register(First) is First
    with pytest.raises(ValueError, match="thing 'a' is already registered"):
        register(Second)
    with pytest.raises(ValueError, match="is not 'module:attribute'"):
        kind.register("grokverify.kinds")
    with pytest.raises(ValueError, match="is not 'module:attribute'"):
        kind.register("::Kind")  # no module before the first colon
    with pytest.raises(KeyError, match="unknown thing 'b'"):
        kind.path("b")


def test_a_new_kind_is_listed_imports_its_implementation_once_and_names_need_strings() -> None:
    kind: Kind[type] = Kind("thing", "name", "grokverify.kinds")
    assert any(k is kind for k in _REGISTRIES)  # so kinds_used and the plugin loader see it

    class Spec:
        name = "a"

    class Unnamed:
        name = 3
    kind.register("grokverify.kinds:Plugin")(Spec)
    assert kind.implementation("a") is Plugin and kind.implementation("a") is Plugin
    assert kind.plugin_of("a") is None
    with pytest.raises(TypeError, match="Unnamed: thing name 'name' must be a string"):
        kind.register("grokverify.kinds:Plugin")(Unnamed)


def test_a_kinds_union_tells_its_specs_apart_by_the_tag() -> None:
    kind: Kind[type] = Kind("shape", "name", "grokverify.kinds")

    @kind.register("grokverify.kinds:Plugin")
    class Round(BaseModel):
        name: Literal["round"] = "round"
        radius: float

    @kind.register("grokverify.kinds:Plugin")
    class Square(BaseModel):
        name: Literal["square"] = "square"
        side: float
    adapter = TypeAdapter(kind.union())
    assert isinstance(adapter.validate_python({"name": "square", "side": 2}), Square)
    with pytest.raises(ValidationError) as err:
        adapter.validate_python({"name": "oval", "radius": 1})
    assert [e["type"] for e in err.value.errors()] == ["union_tag_invalid"]


BASES = [  # each probe runs on the first of these experiments it can measure
    {"task": {"op": "add", "p": 7, "modular": False, "unordered": True, "train_frac": 0.6},
     "model": {"kind": "toy_sum", "hidden": 8, "emb_dim": 2}},
    {"task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3},
     "model": {"kind": "embed_mlp", "d": 4, "hidden": 8}},
]
PARAMS = {"fourier_share": {"k": 2}, "fourier_logits": {"k": 2}, "hessian_max": {"iterations": 2},
          "effective": {"eta": 0.01}}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_every_probe_records_exactly_the_curves_its_spec_declares(name: str) -> None:
    """The loop refuses a probe whose function returns other curves than its spec's `curves`,
    so one training run per probe checks the pair."""
    probe = {"name": name, "every": 2, **PARAMS.get(name, {})}
    for base in BASES:
        try:
            exp = ExperimentSpec.model_validate({
                **base, "optimizer": {"name": "adamw", "lr": 0.01},
                "training": {"steps": 4, "eval_interval": 2}, "probes": [probe]})
        except ValidationError:
            continue
        (record,) = train_seeds(exp, [0])
        assert sorted(record["curves"]) == sorted(exp.curves())
        return
    pytest.fail(f"no base experiment takes probe {name}")


# The plugin loader in this process (tests/test_plugins.py looks from fresh processes): a
# plugin module registers into a test's own registry, found by its `what`.
THINGS: Kind[type] = Kind("plugin test thing", "name", "grokverify.kinds")
_HEAD = """
from grokverify.kinds import _REGISTRIES
THINGS = next(k for k in _REGISTRIES if k.what == "plugin test thing")
"""


def _entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, body: str,
           with_dist: bool = True) -> metadata.EntryPoint:
    """An entry point `gv-t = <module>:plugin` for a module written from `body`, from a
    distribution gv-tdist 0.2.0 (or none)."""
    (tmp_path / f"{module.replace('.', '/')}.py").write_text(_HEAD + body)
    monkeypatch.syspath_prepend(str(tmp_path))
    # a run of the suite before this one in the process (mutmut runs it twice in one) left the
    # package's modules imported, and importing them again would register nothing
    top = module.partition(".")[0]
    for name in [n for n in sys.modules if n == top or n.startswith(f"{top}.")]:
        monkeypatch.delitem(sys.modules, name)
    if not with_dist:
        return metadata.EntryPoint("gv-t", f"{module}:plugin", PLUGIN_GROUP)
    info = tmp_path / f"{module.partition('.')[0]}-0.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gv-tdist\nVersion: 0.2.0\n")
    (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\ngv-t = {module}:plugin\n")
    (entry,) = metadata.Distribution.at(info).entry_points
    return entry


def test_a_plugin_loaded_here_owns_the_kinds_its_package_registers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = _entry(tmp_path, monkeypatch, "gvt_good", """
GROKVERIFY_PLUGIN_API = 1
RESULTS_VERSION = "7"
class Fancy:
    name = "fancy"
class Borrowed:
    name = "borrowed"
Borrowed.__module__ = "elsewhere.things"
THINGS.register("gvt_good:Fancy")(Fancy)
THINGS.register("elsewhere.things:Borrowed")(Borrowed)
""")
    try:
        plugin = _load_plugin(entry)
        assert plugin == Plugin("gv-t", "gvt_good", "gv-tdist", "0.2.0", "7",
                                ("plugin test thing fancy",), None)
        assert THINGS.plugin_of("fancy") == "gv-t" and THINGS.plugin_of("borrowed") is None
        assert THINGS._paths["fancy"] == "gvt_good:Fancy" and _LOADING == []
    finally:
        THINGS._drop("gv-t")
        THINGS._specs.pop("borrowed", None)
    assert "fancy" not in THINGS._specs and THINGS.plugin_of("fancy") is None


def test_a_plugin_in_a_package_owns_what_its_package_registers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry point's module is a submodule: a class of any module of its top-level package
    is the plugin's."""
    (tmp_path / "gvt_pkg").mkdir()
    (tmp_path / "gvt_pkg" / "__init__.py").write_text("")
    (tmp_path / "gvt_pkg" / "shapes.py").write_text("class Sub:\n    name = 'sub'\n")
    entry = _entry(tmp_path, monkeypatch, "gvt_pkg.sub", """
GROKVERIFY_PLUGIN_API = 1
RESULTS_VERSION = "1"
from gvt_pkg.shapes import Sub
class Top:
    name = "top"
THINGS.register("gvt_pkg.sub:Top")(Top)
THINGS.register("gvt_pkg.shapes:Sub")(Sub)
""")
    try:
        plugin = _load_plugin(entry)
        assert plugin.error is None and plugin.module == "gvt_pkg.sub"
        assert plugin.kinds == ("plugin test thing top", "plugin test thing sub")
    finally:
        THINGS._drop("gv-t")


@pytest.mark.parametrize(("module", "body", "with_dist", "error"), [
    ("gvt_broken", "THINGS.register('gvt_broken:X')(type('X', (), {'name': 'x1'}))\n"
     "raise RuntimeError('boom')", True, "cannot import gvt_broken: RuntimeError: boom"),
    ("gvt_api", "GROKVERIFY_PLUGIN_API = 2\nRESULTS_VERSION = '1'\n"
     "THINGS.register('gvt_api:X')(type('X', (), {'name': 'x2'}))", True,
     "written for plugin API 2, this grokverify loads API 1: install a release of gv-tdist made "
     "for it"),
    ("gvt_nodist", "GROKVERIFY_PLUGIN_API = 3\nRESULTS_VERSION = '1'", False,
     "written for plugin API 3, this grokverify loads API 1: install a release of gv-t made "
     "for it"),
    ("gvt_noapi", "RESULTS_VERSION = '1'", True, "written for plugin API None"),
    ("gvt_empty", "GROKVERIFY_PLUGIN_API = 1\nRESULTS_VERSION = ''\n"
     "THINGS.register('gvt_empty:X')(type('X', (), {'name': 'x3'}))", True,
     "gvt_empty declares no RESULTS_VERSION (a non-empty string)"),
    ("gvt_intver", "GROKVERIFY_PLUGIN_API = 1\nRESULTS_VERSION = 3", True,
     "gvt_intver declares no RESULTS_VERSION (a non-empty string)"),
    ("gvt_nover", "GROKVERIFY_PLUGIN_API = 1", True,
     "gvt_nover declares no RESULTS_VERSION (a non-empty string)"),
])
def test_a_plugin_that_cannot_be_used_keeps_its_error_and_registers_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, body: str,
        with_dist: bool, error: str) -> None:
    for stale in ("x1", "x2", "x3"):
        THINGS._specs.pop(stale, None)
    plugin = _load_plugin(_entry(tmp_path, monkeypatch, module, body, with_dist))
    assert plugin.error is not None and plugin.error.startswith(error), plugin.error
    assert (plugin.name, plugin.module, plugin.results_version, plugin.kinds) == (
        "gv-t", module, None, ())
    assert (plugin.distribution, plugin.version) == (
        ("gv-tdist", "0.2.0") if with_dist else (None, None))
    assert not {"x1", "x2", "x3"} & set(THINGS._specs) and _LOADING == []


def test_a_refusal_lists_the_built_in_names_sorted_then_the_plugins_apart() -> None:
    assert names_listed({"b": 1, "a": 2}) == "a, b"
    kind: Kind[type] = Kind("thing", "name", "grokverify.kinds")
    for name in ("z", "p2", "p1"):
        kind.register("grokverify.kinds:Plugin")(type(name, (), {"name": name}))
    kind._plugins.update({"p1": "gv-x", "p2": "gv-x"})
    assert names_listed(kind, repr) == "'z' (from plugins: 'p1', 'p2')"


def test_plugins_are_read_once_from_the_group_in_name_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`plugins()` reads the entry-point group once, loads each plugin in name order (a broken
    one kept with its error) and returns the same listing after."""
    import grokverify.kinds as kinds

    asked: list[str] = []

    def entry_points(group: str) -> list[metadata.EntryPoint]:
        asked.append(group)
        return [metadata.EntryPoint(n, f"gv_no_such_{n[:2]}", group)
                for n in ("zz-broken", "aa-broken")]

    monkeypatch.setattr(kinds.metadata, "entry_points", entry_points)
    monkeypatch.setattr(kinds, "_PLUGINS", None)
    first = kinds.plugins()
    assert list(first) == ["aa-broken", "zz-broken"] and asked == [PLUGIN_GROUP]
    assert first["aa-broken"].error.startswith("cannot import gv_no_such_aa: ModuleNotFoundError")
    assert first["zz-broken"].module == "gv_no_such_zz"
    assert kinds.plugins() is first and asked == [PLUGIN_GROUP]


def test_kinds_used_finds_plain_class_kinds_and_looks_inside_lists_and_mappings() -> None:
    from grokverify.claim.load import load_claim
    from grokverify.kinds import kinds_used

    loaded = load_claim(Path(__file__).parent / "fixtures" / "tiny_claim.yaml")
    exp = next(e for *_, e in loaded.experiments(["quick"]))
    found = {(registry.what, name) for registry, name in kinds_used(exp)}
    assert found == {("task operation", "add"), ("split strategy", "random"),
                     ("model kind", "toy_sum")}
    assert {(r.what, n) for r, n in kinds_used([exp.task])} == {
        ("task operation", "add"), ("split strategy", "random")}
    assert {(r.what, n) for r, n in kinds_used({"arm": exp.model})} == {("model kind", "toy_sum")}
