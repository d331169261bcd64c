"""A claim file's schema: source, base experiment, arms, scales, seeds, metric, criterion,
family and grid."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from grokverify.claim.base import Float, Id, Int, Name, StrictModel
from grokverify.claim.criteria import AnyMetric
from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.grid import GridSpec
from grokverify.claim.limits import MAX_SEEDS
from grokverify.kinds import CHECKS, CRITERIA


class SourceSpec(StrictModel):
    arxiv: str = Field(pattern=r"^\d{4}\.\d{4,5}(v\d+)?$", description="arXiv id, e.g. 2505.15624")
    where: str = Field(min_length=1, description="section, figure or review field")
    role: Literal["paper_claim", "referee", "skeptic", "falsifier", "inference", "open_question"]
    quote: str = Field(min_length=1, description="the source's own words")


AnyCriterion = CRITERIA.union()
AnyCheck = CHECKS.union()


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
    claims (docs/verdicts.md, "Families"): ``all`` (the effect holds on every member) or ``any``
    (on some members: which ones). No ``each``: in English it reads as "all" as readily as "any"."""

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

    untested: Literal["not_tested", "leave_out"] = Field(
        "not_tested", description="a member whose checks fail: not_tested makes the family NOT "
                                  "TESTED; leave_out judges the family on the tested members "
                                  "(and names those left out)")

    trend: TrendSpec | None = Field(None, description=(
        "a trend fitted through the members' estimates (an open question's answer)"))

    @model_validator(mode="after")
    def _trend_of_members(self) -> FamilySpec:
        if self.trend is not None and sorted(self.trend.x) != sorted(self.members):
            raise ValueError(f"trend.x must give every member its x, and no other: members "
                             f"{sorted(self.members)}, trend.x {sorted(self.trend.x)}")
        return self


Side = Literal["paper", "critic", "neither"]


_SIDE_WORDS = {"paper": "the paper's account", "critic": "its critic's account",
               "neither": "neither account"}
_MEANS_FIELD = {"SUPPORTED": "supported", "REFUTED": "refuted", "INCONCLUSIVE": "inconclusive",
                "PARTIAL": "inconclusive", "NOT TESTED": "not_tested", "FINDING": "finding"}
NOT_TESTED_MEANS = ("The run did not realise the regime the claim is about (see the failed "
                    "check), so it says nothing for or against the source.")


class FavoursSpec(StrictModel):
    """Which account each verdict favours: the paper's, its critic's (a referee's or a
    skeptic's), or neither."""

    supported: Side
    refuted: Side


class InterpretationSpec(StrictModel):
    """What each verdict would mean for the source's question, written before the run; the
    report prints the sentence that applies under its verdict line."""

    supported: str | None = Field(None, min_length=1, description="what SUPPORTED would mean")
    refuted: str | None = Field(None, min_length=1, description="what REFUTED would mean")
    inconclusive: str | None = Field(None, min_length=1,
                                     description="what INCONCLUSIVE (or PARTIAL) would mean")
    not_tested: str | None = Field(None, min_length=1,
                                   description="what NOT TESTED would mean (default: the run "
                                               "did not realise the claim's regime)")
    finding: str | None = Field(None, min_length=1,
                                description="an open question: what its estimates answer")
    favours: FavoursSpec | None = Field(None, description="the side each verdict favours")

    def meaning(self, verdict: str) -> str | None:
        """The sentence that applies under `verdict` (a Verdict's value), with the side it
        favours; None where the claim wrote none for it."""
        field = _MEANS_FIELD[verdict]
        words = getattr(self, field) or (NOT_TESTED_MEANS if field == "not_tested" else None)
        if not words:
            return None
        side = getattr(self.favours, field, None) if self.favours else None
        return f"{words.strip()} (favours {_SIDE_WORDS[side]})" if side else words.strip()

    @model_validator(mode="after")
    def _says_something(self) -> InterpretationSpec:
        if not any((self.supported, self.refuted, self.inconclusive, self.not_tested,
                    self.finding)):
            raise ValueError("an interpretation says what at least one verdict would mean")
        return self


PluginName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=100)]


class Claim(StrictModel):
    id: Id
    requires: list[PluginName] = Field(
        default_factory=list, description="the installed plugins its kinds come from "
                                          "(`grokverify plugins`; docs/extending.md, Plugins)")
    title: str = Field(min_length=1)
    statement: str = Field(min_length=1)
    source: SourceSpec
    base: ExperimentSpec
    arms: dict[Name, dict[str, Any]] = Field(min_length=1,
                                             description="arm name -> partial experiment")
    scales: dict[Name, ScaleSpec]
    seeds: SeedCount | SeedsSpec = Field(
        description="seeds 0..n-1 per arm, or {min, max, step} for sequential rounds")
    metric: AnyMetric = Field(description="the per-seed quantity judged: a time to an event "
                                           "or a value read off a curve")
    criterion: AnyCriterion
    family: FamilySpec | None = Field(
        None, description="run the comparison once per member and combine the verdicts")
    grid: GridSpec | None = Field(
        None, description="a sweep over one or two settings, expanded into named arms or "
                          "family members (grokverify.claim.grid)")
    checks: list[AnyCheck] = Field(
        default_factory=list, description="validity checks read off the records: any that "
                                          "fails makes the verdict NOT TESTED")
    interpretation: InterpretationSpec | None = Field(
        None, description="what each verdict would mean for the source's question")
    notes: str = ""

    @field_validator("scales")
    @classmethod
    def _has_quick(cls, v: dict[str, ScaleSpec]) -> dict[str, ScaleSpec]:
        if "quick" not in v:
            raise ValueError(f"a 'quick' scale is required (found: {sorted(v) or 'none'})")
        return v
