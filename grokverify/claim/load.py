"""Loading a claim: YAML, grids, every scale × member × arm resolved into an experiment, and
the checks across fields; a problem names the file, line and field."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grokverify.claim.base import did_you_mean, kind_of
from grokverify.claim.budget import DEFAULT_LIMITS, Limits, check
from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.grid import GridSpec, Setting
from grokverify.claim.messages import source_of, validation_problems
from grokverify.claim.metrics import KIND_WORDS, names_of_kind
from grokverify.claim.metrics import MetricSpec as _Metric
from grokverify.claim.optimizers import OptimizerSpec
from grokverify.claim.schema import Claim, Seeds, SeedsSpec
from grokverify.claim.yamlio import LineMap, Path_, Problem, SpecError, dotted, load_yaml_file
from grokverify.kinds import CRITERIA, METRICS, kinds_used, plugins


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Override wins key by key. A model `kind` change replaces the whole section (its fields
    differ); an optimizer `name` change keeps the shared settings (lr, weight decay, ...) and
    drops those of the old optimizer only (adam's betas when switching to sgd)."""
    if "kind" in override and override.get("kind") != base.get("kind"):
        return copy.deepcopy(override)
    if "name" in override and "name" in base and override["name"] != base["name"]:
        base = OptimizerSpec.renamed(base, override["name"])
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


SINGLE = ""  # the one member of a claim without a family


def arm_label(member: str | None, arm: str) -> str:
    """An arm's label in a result dict: "arm", or "member/arm" in a family."""
    return f"{member}/{arm}" if member else arm


MemberArms = dict[str, dict[str, ExperimentSpec]]  # member -> arm -> experiment


ExperimentAt = tuple[str, str, str, ExperimentSpec]  # scale, member, arm, experiment


class LoadedClaim:
    """A validated claim with every scale × member × arm resolved to an ExperimentSpec
    (`by_scale`), and the line of every key of its file, for problems found after loading."""

    def __init__(self, claim: Claim, path: Path, by_scale: dict[str, MemberArms],
                 lines: LineMap):
        self.claim, self.path, self.by_scale, self.lines = claim, path, by_scale, lines

    def source(self, scale: str, member: str, arm: str, field: Path_) -> Path_:
        """Where the claim sets `field` (a path in the experiment, e.g. ("task", "p")) for this
        scale, member and arm: the most specific override that writes it, else base."""
        return source_of(self.lines, _override_sources(scale, member, arm), field)

    def max_seeds(self, scale: str) -> int:
        """The most seeds per arm the scale runs (a sequential design's max)."""
        seeds = self.scale_seeds(scale)
        return seeds if isinstance(seeds, int) else seeds.max

    def experiments(self, scales: Iterable[str] | None = None) -> Iterator[ExperimentAt]:
        """(scale, member, arm, experiment) of every experiment at `scales` (default: all)."""
        for scale in self.by_scale if scales is None else scales:
            for member, arms in self.by_scale[scale].items():
                for arm, exp in arms.items():
                    yield scale, member, arm, exp

    def experiment_problems(self, found: Iterable[tuple[str, str, str, Path_, str]]
                            ) -> list[Problem]:
        """Problems of resolved experiments, given as (scale, member, arm, experiment field,
        message): one per claim field that sets the field (the most specific override that
        writes it), naming the first experiment it fails at and how many more."""
        by_source: dict[Path_, tuple[str, list[str]]] = {}
        for scale, member, arm, field, message in found:
            where = self.source(scale, member, arm, field)
            words = f"scale {scale!r}, " + (f"member {member!r}, " if member else "") + \
                f"arm {arm!r}"
            by_source.setdefault(where, (message, []))[1].append(words)
        return [Problem(str(self.path), self.lines.line_of(where), dotted(where),
                        f"{message} (at {at[0]}" + (f", and {len(at) - 1} more)" if len(at) > 1
                                                    else ")"))
                for where, (message, at) in by_source.items()]

    @property
    def resolved(self) -> dict[str, dict[str, ExperimentSpec]]:
        """scale -> arm -> experiment, for a claim without a family."""
        return {scale: members[SINGLE] for scale, members in self.by_scale.items()
                if SINGLE in members}

    def members(self, scale: str) -> MemberArms:
        return self.by_scale[scale]

    def scale_seeds(self, scale: str) -> Seeds:
        seeds = self.claim.scales[scale].seeds
        return self.claim.seeds if seeds is None else seeds


def _override_sources(scale: str, member: str, arm: str) -> list[Path_]:
    """Where a resolved field may come from, most specific first."""
    member_source = [("family", "members", member)] if member != SINGLE else []
    return [("scales", scale, "arms", arm), ("arms", arm), *member_source,
            ("scales", scale, "overrides"), ("base",)]


def _resolve(claim_data: dict[str, Any], scale: str, member: str, arm: str) -> dict[str, Any]:
    """base, then the scale's overrides, the family member, the arm, the scale's arm override."""
    scale_data = claim_data["scales"][scale]
    merged = deep_merge(claim_data["base"], scale_data.get("overrides") or {})
    if member != SINGLE:
        merged = deep_merge(merged, claim_data["family"]["members"][member] or {})
    merged = deep_merge(merged, claim_data["arms"][arm] or {})
    return deep_merge(merged, (scale_data.get("arms") or {}).get(arm) or {})


def _required_plugin_problems(requires: Any, file: str, lines: LineMap) -> list[Problem]:
    """Each plugin a claim requires that is not installed, or cannot be used, with what to
    install (a plugin's name is its distribution's, docs/extending.md)."""
    if not isinstance(requires, list):
        return []  # the schema says what `requires` must be
    installed, out = plugins(), []
    for i, name in enumerate(requires):
        if not isinstance(name, str):
            continue
        plugin = installed.get(name)
        if plugin is None:
            why = (f"plugin {name!r} is not installed: pip install {name} (installed: "
                   f"{', '.join(installed) or 'none'}; `grokverify plugins` lists them)")
        elif plugin.error:
            why = f"plugin {name!r} cannot be used: {plugin.error}"
        else:
            continue
        out.append(Problem(file, lines.line_of(("requires", i)), dotted(("requires", i)), why))
    return out


def _undeclared_plugin_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    """A kind a claim names from a plugin it does not require (a claim says what it needs)."""
    out, seen = [], set()
    for registry, name in kinds_used(claim):
        plugin = registry.plugin_of(name)
        if plugin and plugin not in claim.requires and (plugin, name) not in seen:
            seen.add((plugin, name))
            out.append(Problem(file, lines.line_of(("requires",)), "requires",
                               f"{registry.what} {name!r} comes from plugin {plugin!r}: list "
                               f"it under requires"))
    return out


def load_claim(path: Path | str, limits: Limits | None = DEFAULT_LIMITS) -> LoadedClaim:
    """Load, validate and resolve a claim file; raises SpecError listing every problem. With
    `limits` (None: unchecked) one seed of every scale × member × arm must fit them, so a claim
    that could never run is refused when it loads."""
    path = Path(path)
    file = str(path)
    data, lines = load_yaml_file(path)
    if not isinstance(data, dict):
        raise SpecError([Problem(file, lines.line_of(()), "",
                                 f"expected a mapping of claim fields, got {kind_of(data)}")])
    missing = _required_plugin_problems(data.get("requires"), file, lines)
    if missing:  # before the schema, which would call the plugin's kinds unknown
        raise SpecError(missing)
    data = _expand_grid(data, file, lines)
    try:
        claim = Claim.model_validate(data)
    except ValidationError as exc:
        raise SpecError(validation_problems(exc, file, lines, data, Claim, ())) from None
    problems: list[Problem] = _undeclared_plugin_problems(claim, file, lines)
    for scale_name, scale in claim.scales.items():
        for arm in scale.arms:
            if arm not in claim.arms:
                problems.append(Problem(file, lines.line_of(("scales", scale_name, "arms", arm)),
                                        dotted(("scales", scale_name, "arms", arm)),
                                        f"no arm named {arm!r}; arms are {sorted(claim.arms)}"))
    problems += (_kind_problems(claim, file, lines) + _family_problems(claim, file, lines)
                 + _sequential_problems(claim, file, lines) + _role_problems(claim, file, lines))
    for arm in claim.criterion.arms():
        if arm not in claim.arms:
            where = _find_value(data.get("criterion", {}), arm)
            problems.append(Problem(file, lines.line_of(("criterion", *where)),
                                    dotted(("criterion", *where)),
                                    f"criterion refers to arm {arm!r}, which does not exist; "
                                    f"arms are {sorted(claim.arms)}"))
    problems += _check_arm_problems(claim, file, lines)
    if problems:
        raise SpecError(problems)
    member_names = list(claim.family.members) if claim.family else [SINGLE]
    by_scale: dict[str, MemberArms] = {}
    for scale_name in claim.scales:
        by_scale[scale_name] = {}
        for member in member_names:
            by_scale[scale_name][member] = {}
            for arm in claim.arms:
                merged = _resolve(data, scale_name, member, arm)
                try:
                    by_scale[scale_name][member][arm] = ExperimentSpec.model_validate(merged)
                except ValidationError as exc:
                    sources = _override_sources(scale_name, member, arm)
                    for problem in validation_problems(exc, file, lines, merged, ExperimentSpec,
                                                       (), sources):
                        if problem not in problems:
                            problems.append(problem)
    if problems:
        raise SpecError(problems)
    loaded = LoadedClaim(claim, path, by_scale, lines)
    problems += (_curve_problems(claim, by_scale, file, lines) + _batch_problems(loaded)
                 + _zero_step_problems(loaded) + _check_measure_problems(loaded))
    if not problems and limits is not None:
        problems += check(loaded, limits)
    if problems:
        raise SpecError(problems)
    return loaded


def _expand_grid(data: dict[str, Any], file: str, lines: LineMap) -> dict[str, Any]:
    """`data` with the grid's entries added to its arms or family members (each the grid's
    base, then each axis's setting, deep-merged)."""
    if not isinstance(data.get("grid"), dict):
        _cells_from_grid(data, None, file, lines)
        return data
    try:
        grid = GridSpec.model_validate(data["grid"])
    except ValidationError as exc:  # alone: the arms it would have made are not missing
        raise SpecError(validation_problems(exc, file, lines, data["grid"], GridSpec,
                                            ("grid",))) from None
    data = copy.deepcopy(data)
    if grid.into == "arms":
        where: Path_ = ("arms",)
        table = data.setdefault("arms", {})
    elif isinstance(data.get("family"), dict):
        where = ("family", "members")
        table = data["family"].setdefault("members", {})
    else:
        raise SpecError([Problem(file, lines.line_of(("grid", "into")), "grid.into",
                                 "a grid into members needs a family: section (claims, "
                                 "correction) to put them in")])
    if not isinstance(table, dict):
        return data  # the claim's validation says what is wrong with it
    entries = grid.entries()
    taken = [name for name in entries if name in table]
    if taken:
        raise SpecError([Problem(file, lines.line_of(("grid", "name")), "grid.name",
                                 f"the grid generates {', '.join(map(repr, taken))}, which "
                                 f"{dotted(where)} already has")])
    # a problem in a generated entry points at the grid: its name, what its base sets, and each
    # axis's value
    base_lines = {key[2:]: line for key, line in lines.lines.items()
                  if key[:2] == ("grid", "base") and len(key) > 2}
    for name, settings in entries.items():
        merged = copy.deepcopy(grid.base)
        for setting in settings:
            merged = deep_merge(merged, setting.partial())
        table[name] = merged
        lines.lines[(*where, name)] = lines.line_of(("grid", "name")) or 1
        for key, line in base_lines.items():
            lines.lines[(*where, name, *key)] = line
        for st in settings:
            at = ("grid", "axes", st.axis, "values", st.index)
            lines.lines[(*where, name, *st.path.split("."))] = lines.line_of(at) or 1
    _cells_from_grid(data, entries, file, lines)
    return data


def _cells_from_grid(data: dict[str, Any], entries: dict[str, list[Setting]] | None,
                     file: str, lines: LineMap) -> None:
    """A criterion's `grid_axes: {x: <axis>, y: <axis>}` (y optional) written out as `cells:
    {arm: [x, y]}` from the grid's entries (None: the claim has no grid), so a 10 × 10 diagram
    need not list its 100 cells by hand."""
    crit = data.get("criterion")
    if not isinstance(crit, dict) or "grid_axes" not in crit:
        return
    if entries is None:
        raise SpecError([Problem(file, lines.line_of(("criterion", "grid_axes")),
                                 "criterion.grid_axes", "grid_axes names axes of the claim's "
                                 "grid, and the claim has no grid: give cells")])
    if not isinstance(crit["grid_axes"], dict):
        return  # the criterion's validation says what is wrong with it
    if "cells" in crit:
        raise SpecError([Problem(file, lines.line_of(("criterion", "grid_axes")),
                                 "criterion.grid_axes", "give cells or grid_axes, not both")])
    axes: dict[Any, Any] = crit["grid_axes"]
    known = list(next(iter(entries.values()), []))
    wrong = SpecError([Problem(
        file, lines.line_of(("criterion", "grid_axes")), "criterion.grid_axes",
        "expected {x: <axis>, y: <axis>} (y optional) naming numeric grid axes; the grid's "
        f"axes are {', '.join(st.axis for st in known)}")])
    if "x" not in axes or any(k not in ("x", "y") or not isinstance(v, str)
                              for k, v in axes.items()):
        raise wrong
    cells = {}
    for name, settings in entries.items():
        value = {st.axis: st.value for st in settings}
        at = [value.get(axes[k]) if k in axes else 0 for k in ("x", "y")]
        if any(v is None or isinstance(v, bool | str) for v in at):
            raise wrong
        cells[name] = at
    crit["cells"] = cells


def _zero_step_problems(loaded: LoadedClaim) -> list[Problem]:
    """A zero-step budget records step 0 only: a time to an event would be censored at 0 for
    every seed, so only a value metric can read it."""
    metric = loaded.claim.metric
    if metric.kind != "time":
        return []
    return loaded.experiment_problems(
        (scale, member, arm, ("training", "steps"),
         f"a budget of 0 steps measures the initialisation only, and {metric.name!r} is a "
         f"time to an event; read step 0 with a value metric (curve_at with step: 0, "
         f"curve_ratio over start: 0, end: 0)")
        for scale, member, arm, exp in loaded.experiments() if exp.training.steps == 0)


def _batch_problems(loaded: LoadedClaim) -> list[Problem]:
    """A batch larger than the training set would silently train full batch: refused, at
    every scale × member × arm (p and train_frac may differ between them)."""
    return loaded.experiment_problems(
        (scale, member, arm, ("training", "batch_size"),
         f"batch_size {exp.training.batch_size} exceeds the {n_train} training "
         f"{'pairs' if exp.task.inputs == 'pairs' else 'rows'} of this split "
         f"({exp.task.describe()}); use null for full batch")
        for scale, member, arm, exp in loaded.experiments()
        if (exp.training.batch_size or 0) > (n_train := exp.task.sizes()[1]))


def _kind_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    """The claim's metric must be of a kind its criterion accepts (a KM median of signed values,
    or a share of "observed" values that are never censored, would mean nothing)."""
    criterion, name = claim.criterion, claim.criterion.name
    kinds = criterion.kinds()
    metric = claim.metric
    if metric.codes != criterion.reads_codes:
        code_metrics = [n for n, cls in METRICS.specs.items() if cls.codes]
        readers = [n for n, cls in CRITERIA.specs.items() if cls.reads_codes]
        message = (f"criterion {name!r} reads a phase code per seed: give metric "
                   f"{' or '.join(map(repr, code_metrics))}" if criterion.reads_codes else
                   f"metric {metric.name!r} is a category's code, not a quantity: only "
                   f"criterion {' or '.join(map(repr, readers))} reads it")
        return [Problem(file, lines.line_of(("metric", "name")), "metric.name", message)]
    if metric.kind in kinds:
        return []
    quantities = {k: [n for n in names_of_kind(k) if not METRICS.specs[n].codes] for k in kinds}
    wanted = " or ".join(f"{k} metric ({KIND_WORDS[k]}: {', '.join(quantities[k])})"
                         for k in kinds)
    takers = [f"{n} ({cls.kinds_note})" if cls.kinds_note else n
              for n, cls in CRITERIA.specs.items()
              if metric.kind in cls.accepts and not cls.reads_codes]
    note = (f" ({criterion.kinds_note})" if criterion.kinds_note
            and metric.kind in criterion.accepts else "")
    message = (f"criterion {name!r} takes a {wanted}{note}; {metric.name!r} is a "
               f"{metric.kind} metric ({KIND_WORDS[metric.kind]}): judge it with "
               f"{', '.join(takers)}")
    return [Problem(file, lines.line_of(("metric", "name")), "metric.name", message)]


def _family_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    """A family combines its members' p-values against θ: a criterion whose results carry none
    (`CriterionSpec.family_ok`) would give an INCONCLUSIVE family whatever the data say."""
    if claim.family is None or claim.criterion.family_ok:
        return []
    takers = ", ".join(n for n, cls in CRITERIA.specs.items() if cls.family_ok)
    return [Problem(file, lines.line_of(("family",)), "family",
                    f"criterion {claim.criterion.name!r} gives no one-sided p-values against the "
                    f"boundary of its claimed region, so its members cannot be combined into a "
                    f"family; families take {takers}")]


def _role_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    """An open question is answered by estimates (verdict FINDING), so its criterion claims
    nothing; any other claim's criterion must say what is claimed."""
    judged = claim.criterion.judged()
    asks = claim.source.role == "open_question"
    if asks and isinstance(claim.seeds, SeedsSpec):
        return [Problem(file, lines.line_of(("seeds",)), "seeds",
                        "an open question is estimated at a fixed number of seeds (nothing is "
                        "tested, so sequential looks have nothing to stop on): give seeds as a "
                        "number")]
    if judged != asks:
        return []
    if asks:
        return [Problem(file, lines.line_of(("source", "role")), "source.role",
                        f"an open question is reported as a finding, not judged, but criterion "
                        f"{claim.criterion.name!r} declares a claimed region: leave the region "
                        f"out (crossing), or give the claim the role of what it tests")]
    return [Problem(file, lines.line_of(("criterion",)), "criterion",
                    f"criterion {claim.criterion.name!r} declares no claimed region (region "
                    f"left out), which only an open question (source.role: open_question) may "
                    f"do; this claim's role is {claim.source.role!r}: declare the region")]


def _sequential_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    """Sequential `seeds` where the criterion's params are not calibrated for sequential looks
    (`CriterionSpec.sequential_refusal`)."""
    why = claim.criterion.sequential_refusal()
    if not why:
        return []
    where: list[Path_] = [("seeds",)] if isinstance(claim.seeds, SeedsSpec) else []
    where += [("scales", name, "seeds") for name, scale in claim.scales.items()
              if isinstance(scale.seeds, SeedsSpec)]
    return [Problem(file, lines.line_of(path), dotted(path), why) for path in where]


def _claim_metrics(claim: Claim) -> list[tuple[Path_, _Metric]]:
    """Every metric the claim names, with its path: the claim's own and the criterion's (e.g.
    correlation's x and y)."""
    out: list[tuple[Path_, _Metric]] = [(("metric",), claim.metric)]
    out += [(("criterion", key), value) for key, value in claim.criterion
            if isinstance(value, _Metric)]
    return out


def _curve_problems(claim: Claim, by_scale: dict[str, MemberArms], file: str,
                    lines: LineMap) -> list[Problem]:
    """Every curve a metric reads must be recorded by every arm it is read from (the arms the
    criterion compares, at every scale and family member)."""
    problems: list[Problem] = []
    read = set(claim.criterion.arms())
    resolved = [(scale, member, arm, set(exp.curves())) for scale, members in by_scale.items()
                for member, arms in members.items() for arm, exp in arms.items() if arm in read]
    for where, metric in _claim_metrics(claim):
        for key, curve in metric.curve_fields().items():
            lacking = [r for r in resolved if curve not in r[3]]
            if not lacking:
                continue
            known = sorted(lacking[0][3])
            did = did_you_mean(curve, known)
            if len(lacking) == len(resolved):
                message = f"unknown curve {curve!r}{did}; the experiment records: "
            else:
                who = ", ".join(f"arm {a!r}" + (f" of member {m!r}" if m else "") +
                                f" at scale {s!r}" for s, m, a, _ in lacking)
                message = f"curve {curve!r} is not recorded by {who}{did}; it records: "
            path = (*where, key)
            problems.append(Problem(file, lines.line_of(path), dotted(path),
                                    message + ", ".join(known)))
    return problems


def _check_arm_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    return [Problem(file, lines.line_of(("checks", i, "arm")), dotted(("checks", i, "arm")),
                    f"no arm named {spec.arm!r}; arms are {sorted(claim.arms)}")
            for i, spec in enumerate(claim.checks)
            if spec.arm is not None and spec.arm not in claim.arms]


def _check_measure_problems(loaded: LoadedClaim) -> list[Problem]:
    """A check must be able to measure every arm it reads, at every scale and member."""
    problems: list[Problem] = []
    for i, spec in enumerate(loaded.claim.checks):
        for scale, member, arm, exp in loaded.experiments():
            why = spec.cannot_measure(exp) if spec.arm in (None, arm) else None
            if why:
                where = f" (arm {arm!r}" + (f", member {member!r}" if member else "") + \
                    f", scale {scale!r})"
                problems.append(Problem(str(loaded.path), loaded.lines.line_of(("checks", i)),
                                        dotted(("checks", i)), why + where))
                break
    return problems


def _find_value(tree: Any, value: str, path: Path_ = ()) -> Path_:
    """Where a criterion names an arm: a field's value (baseline: c1), else a key of a mapping
    field (crossing's points: {c1: 0.3})."""
    if isinstance(tree, dict):
        for key, sub in tree.items():
            if sub == value:
                return (*path, key)
        for key, sub in tree.items():
            if isinstance(sub, dict) and value in sub:
                return (*path, key, value)
    return path
