"""The claim spec: pydantic models of a claim file, and the loader that resolves its arms.

A claim has a `base` experiment, named `arms` (partial overrides, deep-merged over the base) and
named `scales` (overrides of the base, and optionally of single arms); a `grid` adds arms (or
family members) for a sweep (`grokverify.grid`) before anything else is read. Every scale × arm is
resolved and validated at load time, so a claim that loads is a claim that can run, and every
error names the file, the YAML line, the field path and what was expected.
"""

from __future__ import annotations

import copy
import difflib
import re
import types
import typing
from collections.abc import Collection, Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from grokverify.budget import DEFAULT_LIMITS, Limits, check
from grokverify.catalog.criteria import CRITERION_SPECS
from grokverify.catalog.interventions import EVAL_CURVES, INTERVENTION_SPECS, InterventionSpec
from grokverify.catalog.limits import (
    MAX_BATCH,
    MAX_FACTOR,
    MAX_IMAGES,
    MAX_P,
    MAX_SEEDS,
    MAX_SKEW,
    MAX_STEPS,
)
from grokverify.catalog.metrics import KIND_WORDS, METRIC_SPECS, names_of_kind
from grokverify.catalog.metrics import MetricSpec as _Metric
from grokverify.catalog.models import MODEL_SPECS, ROLE_WORDS
from grokverify.catalog.optimizers import ONLY_FOR, OPTIMIZER_NAMES
from grokverify.catalog.probes import PROBE_SPECS, ProbeSpec
from grokverify.catalog.tasks import (
    IMAGE_DATASETS,
    OP_NAMES,
    SPLIT_NAMES,
    class_count,
    split_sizes,
)
from grokverify.grid import GridSpec, Setting
from grokverify.specbase import Float, Id, Int, Name, RngSeed, StrictModel, kind_of
from grokverify.yamlio import LineMap, Path_, Problem, SpecError, dotted, load_yaml_file

# ---------------------------------------------------------------- experiment


class TaskSpec(StrictModel):
    """An arithmetic task and how its pairs are split."""

    op: str = Field(description="operation: add, sub, mul, div, sq_sum, s3 (p = 6: a ∘ b in "
                                "the symmetric group S3)")
    p: Int = Field(ge=2, le=MAX_P, description="operands are 0..p-1; the modulus when modular")
    modular: bool = Field(True, description="labels mod p; otherwise the raw result")
    unordered: bool = Field(False, description="keep only pairs a <= b (paper 2's toy)")
    train_frac: Float = Field(gt=0, le=1, description="fraction of all pairs used for training")
    test_frac: Float | None = Field(
        None, gt=0, le=1,
        description="fraction of all pairs held out at random as the validation set before the "
                    "training pairs are drawn (paper 1: 0.2); null: validate on every pair not "
                    "in training (paper 2)")
    split: str = Field("random",
                       description="how training pairs are drawn: random, uniform, skewed")
    skew: Float = Field(3.0, gt=0, le=MAX_SKEW,
                        description="skewed split: weight exp(-skew * a / p)")
    split_seed: RngSeed | None = Field(None,
                                       description="fix the split for every seed; null: per seed")

    @field_validator("op")
    @classmethod
    def _known_op(cls, v: str) -> str:
        return _known(v, OP_NAMES, "operation")

    @field_validator("split")
    @classmethod
    def _known_split(cls, v: str) -> str:
        return _known(v, SPLIT_NAMES, "split strategy")

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        if self.test_frac is not None and self.train_frac + self.test_frac > 1 + 1e-9:
            raise ValueError(f"train_frac + test_frac must be <= 1, got "
                             f"{self.train_frac} + {self.test_frac}")
        if self.op == "div" and (not self.modular or not _is_prime(self.p)):
            raise ValueError("op 'div' needs modular: true and a prime p (modular inverse)")
        if self.op == "s3" and (self.p != 6 or self.unordered):
            raise ValueError("op 's3' (paper 2's App. H: composing the 6 permutations of three "
                             "things) needs p: 6 and unordered: false (it is not commutative)")
        n, n_train, n_val = split_sizes(self)
        if n_train < 1 or n_val < 1:
            raise ValueError(f"this split leaves {n_train} training and {n_val} validation "
                             f"pairs of {n}; both need at least one (change train_frac/test_frac)")
        return self

    # What the rest of the library asks of any task kind (`ImageTaskSpec` answers the same).
    inputs: ClassVar[str] = "pairs"  # what a model kind must read (`ModelSpec.inputs`)
    size_field: ClassVar[str] = "p"  # the setting that sets the split's size

    def sizes(self) -> tuple[int, int, int]:
        """(rows, training rows, validation rows), the same for every seed."""
        return split_sizes(self)

    def classes(self) -> int:
        return class_count(self)

    def input_size(self) -> int:
        """What a model's input layer is sized by: the operand values."""
        return self.p

    def data_name(self) -> str | None:
        """The dataset whose files a run needs (`grokverify.datasets`); None: built from the
        spec alone."""
        return None

    def table_bytes(self, n_seeds: int) -> int:
        """Memory of data every seed shares (beside each seed's own rows)."""
        return 0

    def describe(self) -> str:
        return f"p {self.p}, train_frac {self.train_frac:g}"


class ImageTaskSpec(StrictModel):
    """Classification of a dataset's images (paper 2's MNIST, §4.3): each seed trains on its own
    `n_train` images drawn from the standard training file and is validated on `n_val` images
    drawn from the test file (all of them by default), both from the seed's split stream."""

    dataset: str = Field(description="an image dataset read from the user's IDX files: mnist")
    n_train: Int = Field(ge=1, le=MAX_IMAGES,
                         description="training images, drawn per seed from the training file "
                                     "(paper 2: 1,000)")
    n_val: Int | None = Field(None, ge=1, le=MAX_IMAGES,
                              description="validation images, drawn per seed from the test "
                                          "file; null: every test image")
    split_seed: RngSeed | None = Field(None,
                                       description="fix the draw for every seed; null: per seed")

    inputs: ClassVar[str] = "images"
    size_field: ClassVar[str] = "n_train"

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, v: str) -> str:
        return _known(v, tuple(IMAGE_DATASETS), "image dataset")

    @model_validator(mode="after")
    def _fits_files(self) -> ImageTaskSpec:
        info = IMAGE_DATASETS[self.dataset]
        if self.n_train > info.train_rows:
            raise ValueError(f"n_train {self.n_train} exceeds the {info.train_rows} images of "
                             f"{self.dataset}'s training file")
        if self.n_val is not None and self.n_val > info.test_rows:
            raise ValueError(f"n_val {self.n_val} exceeds the {info.test_rows} images of "
                             f"{self.dataset}'s test file")
        return self

    def sizes(self) -> tuple[int, int, int]:
        n_val = self.n_val or IMAGE_DATASETS[self.dataset].test_rows
        return self.n_train + n_val, self.n_train, n_val

    def classes(self) -> int:
        return IMAGE_DATASETS[self.dataset].classes

    def input_size(self) -> int:
        """The pixels of one image."""
        return IMAGE_DATASETS[self.dataset].features

    def data_name(self) -> str | None:
        return self.dataset

    def table_bytes(self, n_seeds: int) -> int:
        """The images the seeds use, as float32, held once for all of them: at most every
        seed's own rows, and at most the files' rows."""
        info = IMAGE_DATASETS[self.dataset]
        rows = min(n_seeds * self.sizes()[0], info.train_rows + info.test_rows)
        return 4 * self.input_size() * rows

    def describe(self) -> str:
        return f"{self.dataset}, n_train {self.n_train}"


def _task_kind(value: Any) -> str:
    """The task kind a mapping describes: an image task names its `dataset`."""
    if isinstance(value, ImageTaskSpec) or (isinstance(value, dict) and "dataset" in value):
        return "ImageTaskSpec"
    return "TaskSpec"


AnyTask = Annotated[
    Annotated[TaskSpec, Tag("TaskSpec")] | Annotated[ImageTaskSpec, Tag("ImageTaskSpec")],
    Discriminator(_task_kind),
]


class OptimizerSpec(StrictModel):
    name: str = Field(description="adam, adamw or sgd")
    lr: Float = Field(gt=0)
    betas: tuple[Float, Float] | None = Field(
        None, description="adam/adamw only; null: torch's default (0.9, 0.999)")
    eps: Float = Field(1e-8, gt=0)
    momentum: Float = Field(0.0, ge=0, lt=1, description="sgd only")
    nesterov: bool = False
    weight_decay: Float = Field(0.0, ge=0)
    emb_lr_mult: Float = Field(1.0, gt=0, le=MAX_FACTOR,
                               description="c: embedding lr = c * lr (Adam-LR)")
    emb_lr: Float | None = Field(
        None, gt=0, description="the embedding lr itself, for sweeps that hold it while lr "
                                "moves (paper 2's Fig. 6); null: emb_lr_mult * lr")
    emb_weight_decay: Float | None = Field(None, ge=0, description="null: same as weight_decay")

    @field_validator("name")
    @classmethod
    def _known_name(cls, v: str) -> str:
        return _known(v, OPTIMIZER_NAMES, "optimizer")

    @field_validator("betas")
    @classmethod
    def _betas_in_range(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not all(0 <= b < 1 for b in v):
            raise ValueError(f"betas must lie in [0, 1), got {list(v)}")
        return v

    # Settings of some optimizers only. Set for another one they are an error (not ignored);
    # an arm that changes `name` drops the ones the new optimizer lacks (`deep_merge`).
    ONLY_FOR: ClassVar[dict[str, tuple[str, ...]]] = ONLY_FOR

    @property
    def embedding_lr(self) -> float:
        return self.lr * self.emb_lr_mult if self.emb_lr is None else self.emb_lr

    @model_validator(mode="after")
    def _fields_apply(self) -> OptimizerSpec:
        for key, names in self.ONLY_FOR.items():
            default = type(self).model_fields[key].default
            if self.name not in names and getattr(self, key) != default:
                raise ValueError(f"{key} applies to {'/'.join(names)} only, not {self.name}")
        if self.nesterov and self.momentum == 0:
            raise ValueError("nesterov needs momentum > 0")
        if self.emb_lr is not None and self.emb_lr_mult != 1:
            raise ValueError("give the embedding lr once: emb_lr or emb_lr_mult, not both")
        return self

    @classmethod
    def renamed(cls, base: dict[str, Any], name: Any) -> dict[str, Any]:
        """`base` without the settings that optimizer `name` does not have."""
        return {k: v for k, v in base.items() if name in cls.ONLY_FOR.get(k, (name,))}


class TrainingSpec(StrictModel):
    steps: Int = Field(ge=0, le=MAX_STEPS, description="training budget in optimizer steps "
                                                       "(0: the initialisation is measured)")
    batch_size: Int | None = Field(
        None, gt=0, le=MAX_BATCH,
        description="null: full batch; at most the split's training pairs (checked at load)")
    eval_interval: Int = Field(gt=0, le=MAX_STEPS, description="steps between evaluations")
    train_threshold: Float = Field(0.99, ge=0, le=1, description="τ_train on train accuracy")
    val_threshold: Float = Field(0.95, ge=0, le=1, description="τ_val on validation accuracy")
    early_stop: bool = Field(
        True, description="freeze a seed's record once both thresholds are reached")

    @model_validator(mode="after")
    def _interval_fits(self) -> TrainingSpec:
        if self.eval_interval > self.steps > 0:
            raise ValueError(f"eval_interval ({self.eval_interval}) exceeds steps ({self.steps})")
        return self


ModelSpec = Annotated[
    typing.Union[tuple(MODEL_SPECS.values())],  # noqa: UP007
    Field(discriminator="kind"),
]
AnyProbe = Annotated[
    typing.Union[tuple(PROBE_SPECS.values())],  # noqa: UP007
    Field(discriminator="name"),
]
AnyIntervention = Annotated[
    typing.Union[tuple(INTERVENTION_SPECS.values())],  # noqa: UP007
    Field(discriminator="name"),
]


class ExperimentSpec(StrictModel):
    """Everything that determines one seed's training run and what is recorded of it (hashed
    into its store key)."""

    task: AnyTask
    model: ModelSpec
    optimizer: OptimizerSpec
    training: TrainingSpec
    probes: list[AnyProbe] = Field(
        default_factory=list, description="measurements recorded as curves during training")
    interventions: list[AnyIntervention] = Field(
        default_factory=list, description="changes to training at declared points")

    @model_validator(mode="after")
    def _optimizer_fits_model(self) -> ExperimentSpec:
        opt = self.optimizer
        if not type(self.model).has_embedding() and (
                opt.emb_lr_mult != 1 or opt.emb_lr is not None
                or opt.emb_weight_decay is not None):
            raise ValueError(f"model {self.model.kind!r} has no embedding group: "
                             "emb_lr_mult/emb_lr/emb_weight_decay do not apply")
        return self

    @model_validator(mode="after")
    def _inputs_match(self) -> ExperimentSpec:
        """A model reads operand pairs or images; so does each probe and intervention."""
        gives = self.task.inputs
        words = {"pairs": "operand pairs", "images": "images"}
        if type(self.model).inputs != gives:
            raise ValueError(f"model {self.model.kind!r} reads {words[type(self.model).inputs]}, "
                             f"and this task gives {words[gives]}")
        declared: list[ProbeSpec | InterventionSpec] = [*self.probes, *self.interventions]
        for item in declared:
            if gives not in type(item).inputs:
                raise ValueError(f"{item.name} measures or changes training on "  # type: ignore[attr-defined]
                                 f"{' or '.join(words[i] for i in type(item).inputs)} only, and "
                                 f"this task gives {words[gives]}")
        return self

    @model_validator(mode="after")
    def _roles_exist(self) -> ExperimentSpec:
        roles = type(self.model).roles
        declared: list[ProbeSpec | InterventionSpec] = [*self.probes, *self.interventions]
        for item in declared:
            for role in item.roles_needed():
                if role not in roles:
                    raise ValueError(
                        f"{item.name} needs {ROLE_WORDS[role]} ({role}), which model "  # type: ignore[attr-defined]
                        f"{self.model.kind!r} does not have (it has: {', '.join(roles)})")
        for probe in self.probes:
            if why := probe.misfit(self.task):
                raise ValueError(why)
        names = [p.name for p in self.probes]  # type: ignore[attr-defined]
        if len(set(names)) != len(names):
            raise ValueError(f"each probe once (got {names}); one probe records all its curves")
        return self

    def curves(self) -> list[str]:
        """The curves every seed's record of this experiment holds (what a value metric can
        read)."""
        return [*EVAL_CURVES, *(c for p in self.probes for c in p.curves())]


# ---------------------------------------------------------------- claim


class SourceSpec(StrictModel):
    arxiv: str = Field(pattern=r"^\d{4}\.\d{4,5}(v\d+)?$", description="arXiv id, e.g. 2505.15624")
    where: str = Field(min_length=1, description="section, figure or review field")
    role: Literal["paper_claim", "referee", "skeptic", "falsifier", "inference", "open_question"]
    quote: str = Field(min_length=1, description="the source's own words")


# a time or value metric, by name (grokverify.catalog.metrics); built here from the registry, as
# the other unions are, so every metric registered before the schema loads is known
MetricSpec = Annotated[
    typing.Union[tuple(METRIC_SPECS.values())],  # noqa: UP007
    Field(discriminator="name"),
]

CriterionSpec = Annotated[
    typing.Union[tuple(c.params_model for c in CRITERION_SPECS.values())],  # noqa: UP007
    Field(discriminator="name"),
]


class SeedsSpec(StrictModel):
    """Sequential seeding: rounds of min, min+step, ..., max seeds per arm, stopping at the first
    round whose verdict is SUPPORTED or REFUTED, each round's CI at the level an alpha-spending
    rule allows, so the overall error rates stay at the criterion's declared level."""

    min: Int = Field(ge=2, le=MAX_SEEDS)
    max: Int = Field(ge=2, le=MAX_SEEDS)
    step: Int = Field(ge=1, le=MAX_SEEDS)
    spending: Literal["obrien_fleming", "pocock"] = "obrien_fleming"

    @model_validator(mode="after")
    def _ordered(self) -> SeedsSpec:
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) must be >= min ({self.min})")
        return self

    def looks(self) -> list[int]:
        out = list(range(self.min, self.max, self.step))
        return [*out, self.max]


Seeds = int | SeedsSpec
SeedCount = Annotated[Int, Field(ge=1, le=MAX_SEEDS)]


class ScaleSpec(StrictModel):
    description: str = Field(min_length=1)
    paper_setting: bool = Field(False, description="true only when this is the paper's setting")
    seeds: SeedCount | SeedsSpec | None = Field(
        None, description="seed count (or sequential rounds) at this scale")
    overrides: dict[str, Any] = Field(default_factory=dict, description="partial experiment")
    arms: dict[Name, dict[str, Any]] = Field(default_factory=dict,
                                             description="per-arm partial experiments")


class TrendSpec(StrictModel):
    """A trend fitted through the members' estimates against one number per member
    (`grokverify.stats.trend`): paper 2's r_c against p. Reported beside the members; it
    decides no verdict."""

    x: dict[Name, Float] = Field(description="member -> its x (e.g. the member's p)")
    fit: Literal["power", "linear"] = Field(
        "power", description="power: log(estimate) on log(x); linear: estimate on x")
    ci_level: Annotated[Float, Field(gt=0, lt=1)] = Field(
        0.95, description="level of the fitted coefficients' CIs")


class FamilySpec(StrictModel):
    """One comparison per member (e.g. per task), combined into one verdict by what the family
    claims (`grokverify.family`): ``all`` (the effect holds on every member) or ``any`` (on some
    members: which ones). No ``each``: in English it reads as "all" as readily as "any"."""

    claims: Literal["all", "any"] = Field(
        "all", description="all: the effect holds on every member (intersection-union test: "
                           "SUPPORTED when every member is at the nominal level; REFUTED when "
                           "any member is after the correction); any: on some members (PARTIAL "
                           "lists those supported after the correction)")
    correction: Literal["holm", "bonferroni", "none"] = Field(
        "holm", description="statsmodels multipletests method applied across members: to "
                            "every verdict under claims: any, to refutation under claims: all")
    members: dict[Name, dict[str, Any]] = Field(
        description="member name -> partial experiment applied to every arm (at least 2)")

    @field_validator("members")
    @classmethod
    def _several(cls, members: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        if len(members) < 2:
            got = f"got 1: {next(iter(members))!r}" if members else "got none"
            raise ValueError(f"a family needs at least 2 members ({got}); a claim about one "
                             "setting needs no family: put its settings in base")
        return members

    trend: TrendSpec | None = Field(None, description=(
        "a trend fitted through the members' estimates (an open question's answer)"))

    @model_validator(mode="after")
    def _trend_of_members(self) -> FamilySpec:
        if self.trend is not None and sorted(self.trend.x) != sorted(self.members):
            raise ValueError(f"trend.x must give every member its x, and no other: members "
                             f"{sorted(self.members)}, trend.x {sorted(self.trend.x)}")
        return self


class Claim(StrictModel):
    id: Id
    title: str = Field(min_length=1)
    statement: str = Field(min_length=1)
    source: SourceSpec
    base: ExperimentSpec
    arms: dict[Name, dict[str, Any]] = Field(min_length=1,
                                             description="arm name -> partial experiment")
    scales: dict[Name, ScaleSpec]
    seeds: SeedCount | SeedsSpec = Field(
        description="seeds 0..n-1 per arm, or {min, max, step} for sequential rounds")
    metric: MetricSpec = Field(description="the per-seed quantity judged: a time to an event "
                                           "or a value read off a curve")
    criterion: CriterionSpec
    family: FamilySpec | None = Field(
        None, description="run the comparison once per member and combine the verdicts")
    grid: GridSpec | None = Field(
        None, description="a sweep over one or two settings, expanded into named arms or "
                          "family members (grokverify.grid)")
    notes: str = ""

    @field_validator("scales")
    @classmethod
    def _has_quick(cls, v: dict[str, ScaleSpec]) -> dict[str, ScaleSpec]:
        if "quick" not in v:
            raise ValueError(f"a 'quick' scale is required (found: {sorted(v) or 'none'})")
        return v


# ---------------------------------------------------------------- resolution


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

Units = dict[str, dict[str, ExperimentSpec]]  # member -> arm -> experiment
Unit = tuple[str, str, str, ExperimentSpec]  # scale, member, arm, experiment


class LoadedClaim:
    """A validated claim with every scale × member × arm resolved to an ExperimentSpec, and the
    line of every key of its file (for problems found after loading: `grokverify.budget`)."""

    def __init__(self, claim: Claim, path: Path, units: dict[str, Units], lines: LineMap):
        self.claim, self.path, self.units, self.lines = claim, path, units, lines

    def source(self, scale: str, member: str, arm: str, field: Path_) -> Path_:
        """Where the claim sets `field` (a path in the experiment, e.g. ("task", "p")) for this
        scale, member and arm: the most specific override that writes it, else base."""
        return _source(self.lines, _override_sources(scale, member, arm), field)

    def max_seeds(self, scale: str) -> int:
        """The most seeds per arm the scale runs (a sequential design's max)."""
        seeds = self.scale_seeds(scale)
        return seeds if isinstance(seeds, int) else seeds.max

    def experiments(self, scales: Iterable[str] | None = None) -> Iterator[Unit]:
        """(scale, member, arm, experiment) of every unit at `scales` (default: all)."""
        for scale in self.units if scales is None else scales:
            for member, arms in self.units[scale].items():
                for arm, exp in arms.items():
                    yield scale, member, arm, exp

    def unit_problems(self, found: Iterable[tuple[str, str, str, Path_, str]]) -> list[Problem]:
        """Problems of resolved units, (scale, member, arm, experiment field, message): one per
        claim field that sets the field (the most specific override that writes it), naming
        the first unit it fails at and how many more."""
        units: dict[Path_, tuple[str, list[str]]] = {}
        for scale, member, arm, field, message in found:
            where = self.source(scale, member, arm, field)
            words = f"scale {scale!r}, " + (f"member {member!r}, " if member else "") + \
                f"arm {arm!r}"
            units.setdefault(where, (message, []))[1].append(words)
        return [Problem(str(self.path), self.lines.line_of(where), dotted(where),
                        f"{message} (at {at[0]}" + (f", and {len(at) - 1} more)" if len(at) > 1
                                                    else ")"))
                for where, (message, at) in units.items()]

    @property
    def resolved(self) -> dict[str, dict[str, ExperimentSpec]]:
        """scale -> arm -> experiment, for a claim without a family."""
        return {scale: members[SINGLE] for scale, members in self.units.items()
                if SINGLE in members}

    def members(self, scale: str) -> Units:
        return self.units[scale]

    def scale_seeds(self, scale: str) -> Seeds:
        seeds = self.claim.scales[scale].seeds
        return self.claim.seeds if seeds is None else seeds


def _override_sources(scale: str, member: str, arm: str) -> list[Path_]:
    """Where a resolved field may come from, most specific first."""
    member_source = [("family", "members", member)] if member != SINGLE else []
    return [("scales", scale, "arms", arm), ("arms", arm), *member_source,
            ("scales", scale, "overrides"), ("base",)]


def _source(lines: LineMap, sources: list[Path_], field: Path_) -> Path_:
    """`field` under the first source that writes it (the last source when none does)."""
    for source in sources:
        if lines.has((*source, *field)) or source == sources[-1]:
            return (*source, *field)
    return field


def _resolve(claim_data: dict[str, Any], scale: str, member: str, arm: str) -> dict[str, Any]:
    """base, then the scale's overrides, the family member, the arm, the scale's arm override."""
    scale_data = claim_data["scales"][scale]
    merged = deep_merge(claim_data["base"], scale_data.get("overrides") or {})
    if member != SINGLE:
        merged = deep_merge(merged, claim_data["family"]["members"][member] or {})
    merged = deep_merge(merged, claim_data["arms"][arm] or {})
    return deep_merge(merged, (scale_data.get("arms") or {}).get(arm) or {})


def load_claim(path: Path | str, limits: Limits | None = DEFAULT_LIMITS) -> LoadedClaim:
    """Load, validate and resolve a claim file; raises SpecError listing every problem.

    With `limits` (None: unchecked), one seed of every scale × member × arm must fit them
    (`grokverify.budget.check`): a claim that could never run is refused when it loads."""
    path = Path(path)
    file = str(path)
    data, lines = load_yaml_file(path)
    if not isinstance(data, dict):
        raise SpecError([Problem(file, lines.line_of(()), "",
                                 f"expected a mapping of claim fields, got {kind_of(data)}")])
    data = _expand_grid(data, file, lines)
    try:
        claim = Claim.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_problems(exc, file, lines, data, Claim, ())) from None
    problems: list[Problem] = []
    for scale_name, scale in claim.scales.items():
        for arm in scale.arms:
            if arm not in claim.arms:
                problems.append(Problem(file, lines.line_of(("scales", scale_name, "arms", arm)),
                                        dotted(("scales", scale_name, "arms", arm)),
                                        f"no arm named {arm!r}; arms are {sorted(claim.arms)}"))
    crit = CRITERION_SPECS[claim.criterion.name]
    problems += (_kind_problems(claim, file, lines) + _family_problems(claim, file, lines)
                 + _sequential_problems(claim, file, lines) + _role_problems(claim, file, lines))
    for arm in crit.arms_of(claim.criterion):
        if arm not in claim.arms:
            where = _find_value(data.get("criterion", {}), arm)
            problems.append(Problem(file, lines.line_of(("criterion", *where)),
                                    dotted(("criterion", *where)),
                                    f"criterion refers to arm {arm!r}, which does not exist; "
                                    f"arms are {sorted(claim.arms)}"))
    if problems:
        raise SpecError(problems)
    member_names = list(claim.family.members) if claim.family else [SINGLE]
    units: dict[str, Units] = {}
    for scale_name in claim.scales:
        units[scale_name] = {}
        for member in member_names:
            units[scale_name][member] = {}
            for arm in claim.arms:
                merged = _resolve(data, scale_name, member, arm)
                try:
                    units[scale_name][member][arm] = ExperimentSpec.model_validate(merged)
                except ValidationError as exc:
                    for problem in _problems(exc, file, lines, merged, ExperimentSpec, (),
                                             _override_sources(scale_name, member, arm)):
                        if problem not in problems:
                            problems.append(problem)
    if problems:
        raise SpecError(problems)
    loaded = LoadedClaim(claim, path, units, lines)
    problems += (_curve_problems(claim, units, file, lines) + _batch_problems(loaded)
                 + _zero_step_problems(loaded))
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
        raise SpecError(_problems(exc, file, lines, data["grid"], GridSpec, ("grid",))) from None
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
    """A criterion that places arms in the grid (`grid_axes: {x: <axis>, y: <axis>}`, y
    optional: phase_order's) gets `cells: {arm: [x, y]}` written out from the generated
    entries (None: the claim has no grid), so a 10 × 10 diagram need not list its 100 cells
    by hand."""
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
    return loaded.unit_problems(
        (scale, member, arm, ("training", "steps"),
         f"a budget of 0 steps measures the initialisation only, and {metric.name!r} is a "
         f"time to an event; read step 0 with a value metric (curve_at with step: 0, "
         f"curve_ratio over start: 0, end: 0)")
        for scale, member, arm, exp in loaded.experiments() if exp.training.steps == 0)


def _batch_problems(loaded: LoadedClaim) -> list[Problem]:
    """A batch larger than the training set would silently train full batch: refused, at
    every scale × member × arm (p and train_frac may differ between them)."""
    return loaded.unit_problems(
        (scale, member, arm, ("training", "batch_size"),
         f"batch_size {exp.training.batch_size} exceeds the {n_train} training "
         f"{'pairs' if exp.task.inputs == 'pairs' else 'rows'} of this split "
         f"({exp.task.describe()}); use null for full batch")
        for scale, member, arm, exp in loaded.experiments()
        if (exp.training.batch_size or 0) > (n_train := exp.task.sizes()[1]))


# ---------------------------------------------------------------- metric checks


def _kind_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    """The claim's metric must be of a kind its criterion accepts (a KM median of signed values,
    or a share of "observed" values that are never censored, would mean nothing)."""
    schema = CRITERION_SPECS[claim.criterion.name]
    kinds = schema.kinds_of(claim.criterion)
    metric = claim.metric
    if metric.codes != schema.reads_codes:
        code_metrics = [n for n, cls in METRIC_SPECS.items() if cls.codes]
        readers = [s.name for s in CRITERION_SPECS.values() if s.reads_codes]
        message = (f"criterion {schema.name!r} reads a phase code per seed: give metric "
                   f"{' or '.join(map(repr, code_metrics))}" if schema.reads_codes else
                   f"metric {metric.name!r} is a category's code, not a quantity: only "
                   f"criterion {' or '.join(map(repr, readers))} reads it")
        return [Problem(file, lines.line_of(("metric", "name")), "metric.name", message)]
    if metric.kind in kinds:
        return []
    quantities = {k: [n for n in names_of_kind(k) if not METRIC_SPECS[n].codes] for k in kinds}
    wanted = " or ".join(f"{k} metric ({KIND_WORDS[k]}: {', '.join(quantities[k])})"
                         for k in kinds)
    takers = [f"{s.name} ({s.kinds_note})" if s.kinds_note else s.name
              for s in CRITERION_SPECS.values()
              if metric.kind in s.accepts and not s.reads_codes]
    note = f" ({schema.kinds_note})" if schema.kinds_note and metric.kind in schema.accepts else ""
    message = (f"criterion {schema.name!r} takes a {wanted}{note}; {metric.name!r} is a "
               f"{metric.kind} metric ({KIND_WORDS[metric.kind]}): judge it with "
               f"{', '.join(takers)}")
    return [Problem(file, lines.line_of(("metric", "name")), "metric.name", message)]


def _family_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    """A family combines its members' p-values against θ: a criterion whose results carry none
    (`CriterionSchema.family_ok`) would give an INCONCLUSIVE family whatever the data say."""
    schema = CRITERION_SPECS[claim.criterion.name]
    if claim.family is None or schema.family_ok:
        return []
    takers = ", ".join(s.name for s in CRITERION_SPECS.values() if s.family_ok)
    return [Problem(file, lines.line_of(("family",)), "family",
                    f"criterion {schema.name!r} gives no one-sided p-values against the "
                    f"boundary of its claimed region, so its members cannot be combined into a "
                    f"family; families take {takers}")]


def _role_problems(claim: Claim, file: str, lines: LineMap) -> list[Problem]:
    """An open question is answered by estimates (verdict FINDING), so its criterion claims
    nothing; any other claim's criterion must say what is claimed."""
    judged = CRITERION_SPECS[claim.criterion.name].judged(claim.criterion)
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
    (`CriterionSchema.sequential_refusal`)."""
    refusal = CRITERION_SPECS[claim.criterion.name].sequential_refusal
    why = refusal(claim.criterion) if refusal else ""
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


def _curve_problems(claim: Claim, units: dict[str, Units], file: str,
                    lines: LineMap) -> list[Problem]:
    """Every curve a metric reads must be recorded by every arm it is read from (the arms the
    criterion compares, at every scale and family member)."""
    problems: list[Problem] = []
    read = set(CRITERION_SPECS[claim.criterion.name].arms_of(claim.criterion))
    resolved = [(scale, member, arm, set(exp.curves())) for scale, members in units.items()
                for member, arms in members.items() for arm, exp in arms.items() if arm in read]
    for where, metric in _claim_metrics(claim):
        for key, curve in metric.curve_fields().items():
            lacking = [r for r in resolved if curve not in r[3]]
            if not lacking:
                continue
            known = sorted(lacking[0][3])
            hint = difflib.get_close_matches(curve, known, n=1)
            did = f" (did you mean {hint[0]!r}?)" if hint else ""
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


# ---------------------------------------------------------------- error messages


def _known(value: str, registry: Collection[str], what: str) -> str:
    if value not in registry:
        hint = difflib.get_close_matches(value, list(registry), n=1)
        did = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise ValueError(f"unknown {what} {value!r}{did}; known: {', '.join(sorted(registry))}")
    return value


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % k for k in range(2, int(n**0.5) + 1))


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


def _problems(exc: ValidationError, file: str, lines: LineMap, data: Any, model: Any,
              prefix: Path_, sources: list[Path_] | None = None) -> list[Problem]:
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
            known = ", ".join(repr(name) for name in sorted(registry))
            if err["type"] == "union_tag_not_found":
                message = f"required field is missing; one of: {known}"
            else:
                tag = str(err["ctx"]["tag"])
                hint = difflib.get_close_matches(tag, list(registry), n=1)
                did = f" (did you mean {hint[0]!r}?)" if hint else ""
                message = f"unknown {what} {tag!r}{did}; known: {known}"
        elif err["type"] == "extra_forbidden":
            allowed = _allowed_keys(model, path[:-1], data)
            hint = difflib.get_close_matches(str(path[-1]), allowed, n=1)
            message = f"unknown key {path[-1]!r}"
            message += f" (did you mean {hint[0]!r}?)" if hint else ""
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
            shown_path = _source(lines, sources, path)
            line = lines.line_of(_deepest_defined(lines, shown_path))
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


# discriminator -> (what it names, registry of its values), for the tagged unions above; a
# `name` tag names a criterion unless the path runs through one of _TAGGED_BY_FIELD's fields
_TAGGED: dict[str, tuple[str, dict[str, Any]]] = {"kind": ("model kind", MODEL_SPECS),
                                                  "name": ("criterion", CRITERION_SPECS)}
_TAGGED_BY_FIELD: dict[str, tuple[str, dict[str, Any]]] = {
    "probes": ("probe", PROBE_SPECS), "interventions": ("intervention", INTERVENTION_SPECS),
    # the claim's metric, and every criterion field that holds one (correlation's x and y)
    "metric": ("metric", METRIC_SPECS), **{
        key: ("metric", METRIC_SPECS) for schema in CRITERION_SPECS.values()
        for key, info in schema.params_model.model_fields.items()
        if any(isinstance(a, type) and issubclass(a, _Metric)
               for a in typing.get_args(info.annotation))}}


def _tag_registry(tag_key: str, path: Path_) -> tuple[str, dict[str, Any]]:
    for part in reversed(path):
        if isinstance(part, str) and part in _TAGGED_BY_FIELD:
            return _TAGGED_BY_FIELD[part]
    return _TAGGED.get(tag_key, (tag_key, {}))
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


def _deepest_defined(lines: LineMap, path: Path_) -> Path_:
    for end in range(len(path), 0, -1):
        if lines.has(path[:end]):
            return path[:end]
    return ()
