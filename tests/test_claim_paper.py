"""Paper files (claims/papers/): questions with their claims and answer rules, checked against
the claims folder at load, refused at file:line when wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimtext import ROOT, line_no, validate, write

from grokverify.claim.files import claim_files
from grokverify.claim.paper import claim_sources, load_paper, paper_files
from grokverify.claim.yamlio import SpecError

PAPER = """\
arxiv: "2505.15624"
title: A paper
central:
  - id: q_one
    asks: Does it hold?
    where: Sec. 1
    quote: It holds.
    claims:
      - adam_lr
      - skeptic_sgd
    answer:
      rule: all_agree
      min_decided: 2
    answers:
      paper: For the paper.
      critic: For its critic.
      mixed: Both.
      open: Neither decided.
"""
SOURCES = {"adam_lr": "2505.15624", "skeptic_sgd": "2505.15624", "p2_mnist_grokking": "2205.10343"}


def _problem(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as exc:
        load_paper(write(tmp_path, text, "paper.yaml"), SOURCES)
    return str(exc.value)


def test_a_paper_file_loads_with_its_questions_and_rules(tmp_path: Path) -> None:
    paper = load_paper(write(tmp_path, PAPER, "paper.yaml"), SOURCES)
    (question,) = paper.all_questions()
    assert question.claims == ["adam_lr", "skeptic_sgd"]
    assert question.answer.rule == "all_agree" and question.answer.min_decided == 2
    assert question.answers.sentence("mixed") == "Both."


def test_a_claim_that_is_missing_or_about_another_paper_is_refused_at_its_line(
        tmp_path: Path) -> None:
    missing = PAPER.replace("      - skeptic_sgd", "      - skeptic_sdg")
    found = _problem(tmp_path, missing)
    assert f"paper.yaml:{line_no(missing, '- skeptic_sdg')}: central[0].claims[1]:" in found
    assert "no claim 'skeptic_sdg' in the claims folder" in found
    other = PAPER.replace("      - skeptic_sgd", "      - p2_mnist_grokking")
    assert "is about arXiv 2205.10343, not 2505.15624" in _problem(tmp_path, other)


def test_an_unknown_rule_or_key_names_its_line_and_the_known_ones(tmp_path: Path) -> None:
    bad_rule = PAPER.replace("rule: all_agree", "rule: majority")
    found = _problem(tmp_path, bad_rule)
    assert f":{line_no(bad_rule, 'rule: majority')}:" in found
    assert "all_agree" in found and "first_decided" in found
    extra = PAPER.replace("    where: Sec. 1\n", "    where: Sec. 1\n    verdict: SUPPORTED\n")
    assert f":{line_no(extra, 'verdict: SUPPORTED')}:" in _problem(tmp_path, extra)
    twice = PAPER.replace("      - skeptic_sgd", "      - adam_lr")
    assert "names a claim twice" in _problem(tmp_path, twice)


def test_the_shipped_paper_files_name_every_claim_of_their_paper() -> None:
    """Each shipped paper file loads against claims/, and every claim about its paper bears on
    at least one of its questions (a referee report leaves none out)."""
    sources = claim_sources(claim_files([ROOT / "claims"]))
    files = paper_files(ROOT / "claims")
    assert [p.name for p in files] == ["2201.02177.yaml", "2205.10343.yaml", "2301.05217.yaml",
                                       "2505.15624.yaml"]
    for path in files:
        paper = load_paper(path, sources)
        named = {c for q in paper.all_questions() for c in q.claims}
        assert {c for c, arxiv in sources.items() if arxiv == paper.arxiv} <= named


def test_a_claims_folder_expands_to_its_claims_not_its_paper_files_nor_drafts(
        tmp_path: Path) -> None:
    files = claim_files([ROOT / "claims"])
    assert len(files) == 56 and not any({"papers", "drafts"} & set(p.parts) for p in files)
    for name in ("claims/a.yaml", "claims/drafts/b.yaml", "claims/papers/2201.02177.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("id: x\n")
    assert claim_files([tmp_path / "claims"]) == [tmp_path / "claims" / "a.yaml"]
    # a drafts folder is read when given itself
    assert claim_files([tmp_path / "claims" / "drafts"]) == [tmp_path / "claims/drafts/b.yaml"]


def test_validate_checks_a_folders_paper_files(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    folder = tmp_path / "claims"
    (folder / "papers").mkdir(parents=True)
    for claim in ("adam_lr", "skeptic_sgd"):
        (folder / f"{claim}.yaml").write_text((ROOT / "claims" / f"{claim}.yaml").read_text())
    (folder / "broken.yaml").write_text("id: [unclosed\n")
    good = write(folder / "papers", PAPER, "p.yaml")
    rc, out, err = validate(capsys, folder)
    assert rc == 2 and f"ok {good}: paper 2505.15624 (1 central claim(s), 0 question(s))" in out
    assert "broken.yaml" in err and "Traceback" not in err
    (folder / "broken.yaml").unlink()
    bad = PAPER.replace("      - skeptic_sgd", "      - nowhere")
    write(folder / "papers", bad, "p.yaml")
    rc, out, err = validate(capsys, folder)
    assert rc == 2 and f"p.yaml:{line_no(bad, '- nowhere')}: central[0].claims[1]: no claim" in err


def test_validate_reads_a_paper_file_given_itself_as_a_paper(
        capsys: pytest.CaptureFixture[str]) -> None:
    paper = ROOT / "claims" / "papers" / "2505.15624.yaml"
    rc, out, err = validate(capsys, paper)
    assert rc == 0 and f"ok {paper}: paper 2505.15624 (" in out, (out, err)
    assert "required field is missing" not in err and out.count("ok ") == 1
