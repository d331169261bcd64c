"""A paper file (claims/papers/*.yaml): the paper's central claims and its reviewers' questions,
each with the claims that bear on it, a declared rule that composes the answer from their
verdicts and sides, and the sentence each answer gives, all written before any run
(docs/verdicts.md, "Questions and referee reports")."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from grokverify.claim.base import Id, Int, StrictModel, kind_of
from grokverify.claim.files import PAPERS_DIR
from grokverify.claim.messages import validation_problems
from grokverify.claim.yamlio import Problem, SpecError, dotted, load_yaml_file
from grokverify.kinds import ANSWER_RULES

Answer = Literal["paper", "critic", "mixed", "open"]


class RuleSpec(StrictModel):
    """How a question's answer follows from its claims' verdicts: each decided claim (SUPPORTED
    or REFUTED) favours the paper, its critic or neither by its interpretation."""


@ANSWER_RULES.register("grokverify.stats.answers:all_agree")
class AllAgreeSpec(RuleSpec):
    """The side every decided claim favours; mixed when they disagree; open with fewer than
    `min_decided` decided (undecided and NOT TESTED claims answer nothing)."""

    rule: Literal["all_agree"]
    min_decided: Int = Field(1, ge=1, description="decided claims needed for an answer")


@ANSWER_RULES.register("grokverify.stats.answers:first_decided")
class FirstDecidedSpec(RuleSpec):
    """The side of the first decided claim in the question's order (the one that settles it,
    then its fallbacks); open when none is decided."""

    rule: Literal["first_decided"]


class AnswersSpec(StrictModel):
    """The sentence each answer gives, in the question's terms, written before the runs."""

    paper: str = Field(min_length=1, description="the evidence favours the paper")
    critic: str = Field(min_length=1, description="the evidence favours its critic")
    mixed: str = Field(min_length=1, description="decided claims favour both sides")
    open: str = Field(min_length=1, description="too few claims decided to answer")

    def sentence(self, answer: Answer) -> str:
        return str(getattr(self, answer))


class QuestionSpec(StrictModel):
    """One question put to the paper: its source's words, the claims that test it (in the
    rule's order) and how their verdicts answer it."""

    id: Id
    asks: str = Field(min_length=1, description="the question, in one sentence")
    where: str = Field(min_length=1, description="who asks it: a section, or a review field")
    quote: str = Field(min_length=1, description="the source's own words")
    claims: list[Id] = Field(min_length=1, description="claim ids (claims/), in the rule's order")
    answer: ANSWER_RULES.union() = Field(description="the rule that composes the answer")  # type: ignore[valid-type]
    answers: AnswersSpec

    @model_validator(mode="after")
    def _distinct(self) -> QuestionSpec:
        if len(set(self.claims)) != len(self.claims):
            raise ValueError(f"question {self.id!r} names a claim twice: {self.claims}")
        return self


class PaperSpec(StrictModel):
    """A paper's central claims and the reviewers' questions, each a `QuestionSpec`."""

    arxiv: str = Field(pattern=r"^\d{4}\.\d{4,5}(v\d+)?$", description="arXiv id")
    title: str = Field(min_length=1)
    central: list[QuestionSpec] = Field(min_length=1, description="the paper's central claims")
    questions: list[QuestionSpec] = Field(default_factory=list,
                                          description="the reviewers' and critics' questions")

    @model_validator(mode="after")
    def _unique_ids(self) -> PaperSpec:
        ids = [q.id for q in (*self.central, *self.questions)]
        if len(set(ids)) != len(ids):
            raise ValueError(f"each question id once (got {sorted(ids)})")
        return self

    def all_questions(self) -> list[QuestionSpec]:
        return [*self.central, *self.questions]


def load_paper(path: Path, claims: dict[str, str]) -> PaperSpec:
    """A paper file, checked against the claims it may name (claim id -> its source's arXiv
    id): every named claim exists and is about this paper. Raises SpecError at file:line."""
    file = str(path)
    data, lines = load_yaml_file(path)
    if not isinstance(data, dict):
        raise SpecError([Problem(file, lines.line_of(()), "",
                                 f"expected a mapping of paper fields, got {kind_of(data)}")])
    try:
        paper = PaperSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(validation_problems(exc, file, lines, data, PaperSpec, ())) from None
    problems = []
    for part in ("central", "questions"):
        for i, question in enumerate(getattr(paper, part)):
            for j, claim in enumerate(question.claims):
                if claim not in claims:
                    why = f"no claim {claim!r} in the claims folder"
                elif claims[claim] != paper.arxiv:
                    why = f"claim {claim!r} is about arXiv {claims[claim]}, not {paper.arxiv}"
                else:
                    continue
                where = (part, i, "claims", j)
                problems.append(Problem(file, lines.line_of(where), dotted(where), why))
    if problems:
        raise SpecError(problems)
    return paper


def paper_files(folder: Path) -> list[Path]:
    """The paper files of a claims folder (its `papers/*.yaml`), sorted."""
    return sorted(p for p in (folder / PAPERS_DIR).glob("*.yaml") if p.is_file())


def claim_sources(files: list[Path]) -> dict[str, str]:
    """Claim id -> its source's arXiv id, read from claim files without resolving them."""
    out: dict[str, str] = {}
    for path in files:
        try:
            data, _ = load_yaml_file(path)
        except SpecError:
            continue  # a claim file that cannot be read is reported by its own loading
        if isinstance(data, dict) and isinstance(data.get("source"), dict):
            out[str(data.get("id"))] = str(data["source"].get("arxiv"))
    return out
