"""benchmarks/mutation.py's bookkeeping: the score it prints and what --rerun-alive carries over
from the committed report. mutmut itself is not run here (hours); the statuses are made up."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import mutation  # noqa: E402

OLD_REPORT = """# Mutation report

- commit: abc1234 (with uncommitted changes)
- **mutation_score = 3 / (6 - 1 equivalent - 0 skipped) = 0.600**

## Surviving mutants (2)

- `grokverify.stats.verdict.x_f__mutmut_2`: survived
- `grokverify.stats.verdict.x_f__mutmut_3`: not checked

## Equivalent mutants (1)

- `grokverify.stats.verdict.x_f__mutmut_6`: same
"""


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "mutation-report.md"
    path.write_text(OLD_REPORT)
    monkeypatch.setattr(mutation, "REPORT", path)
    monkeypatch.setattr(mutation, "core_modules", lambda: ["grokverify/stats/verdict.py"])
    monkeypatch.setattr(mutation, "version", lambda name: "3.8.1")  # mutmut is not in [dev]
    return path


def test_previous_run_reads_the_commit_and_the_mutants_it_does_not_vouch_for(report: Path) -> None:
    # the alive ones and the equivalent ones: the report vouches for neither's kill
    assert mutation.previous_run() == ("abc1234", ["grokverify.stats.verdict.x_f__mutmut_2",
                                                   "grokverify.stats.verdict.x_f__mutmut_3",
                                                   "grokverify.stats.verdict.x_f__mutmut_6"])
    report.write_text(OLD_REPORT.replace("- commit: abc1234 (with uncommitted changes)",
                                         "- commit: def5678\n- carried from: abc1234 (...)"))
    assert mutation.previous_run()[0] == "abc1234"  # kills were established at the first run


def test_a_report_without_a_commit_is_refused(report: Path) -> None:
    report.write_text("# Mutation report\n\n## Surviving mutants (0)\n")
    with pytest.raises(SystemExit, match="names no commit"):
        mutation.previous_run()


def test_carried_kills_count_as_killed_and_alive_ones_are_listed(report: Path) -> None:
    names = [f"grokverify.stats.verdict.x_f__mutmut_{i}" for i in range(1, 7)]
    status = {names[0]: mutation.CARRIED, names[1]: "killed", names[2]: "survived",
              names[3]: mutation.CARRIED, names[4]: "timeout", names[5]: "survived"}
    score = mutation.write_report(status, {names[5]: "same"}, None, carried_from=None)
    # killed: 2 carried + 1 killed + 1 timeout, of 6 - 1 equivalent
    assert score == pytest.approx(4 / 5)
    text = report.read_text()
    assert "mutation_score = 4 / (6 − 1 equivalent − 0 skipped) = 0.800" in text
    assert "| grokverify/stats/verdict.py | 6 | 4 | 1 | 0 | 1 | 0 |" in text
    alive = text.split("## Surviving mutants (1)", 1)[1].split("## Equivalent", 1)[0]
    assert f"`{names[2]}`: survived" in alive and names[0] not in alive


def test_carrying_is_refused_when_a_core_module_changed() -> None:
    if mutation._git("rev-parse", "--is-shallow-repository") == "true":  # pragma: no cover
        pytest.skip("a shallow clone has no first commit to compare with")
    if Path(mutation._git("rev-parse", "--show-toplevel")) != mutation.ROOT:  # pragma: no cover
        pytest.skip("not a checkout's own root (mutmut's copy of it, inside a checkout)")
    first = mutation._git("rev-list", "--max-parents=0", "HEAD").split()[0]
    problems = mutation.carry_problems(first)
    assert problems and "core modules changed since" in problems[0]


def test_an_equivalent_entry_that_a_test_kills_is_listed_as_stale(report: Path) -> None:
    names = [f"grokverify.stats.verdict.x_f__mutmut_{i}" for i in range(1, 4)]
    status = {names[0]: "killed", names[1]: "survived", names[2]: "killed"}
    score = mutation.write_report(status, {names[1]: "same", names[2]: "wrongly listed"}, None)
    assert score == pytest.approx(2 / 2)  # 2 killed of 3 - 1 (truly) equivalent
    text = report.read_text()
    stale = text.split("## Listed as equivalent but killed (1)", 1)[1].split("## Equivalent", 1)[0]
    assert f"`{names[2]}`: killed" in stale
    assert f"`{names[1]}`: same" in text.split("## Equivalent mutants (1)", 1)[1]


def test_a_stopped_run_lists_what_it_did_not_reach_and_resumes_from_it(report: Path) -> None:
    names = [f"grokverify.stats.verdict.x_f__mutmut_{i}" for i in range(1, 5)]
    status = {names[0]: "killed", names[1]: "survived", names[2]: "not checked",
              names[3]: "check was interrupted by user"}
    mutation.write_report(status, {}, None)
    text = report.read_text()
    assert "Partial run: 2 of 4 mutants not yet run" in text
    pending = text.split("## Not yet run (2)", 1)[1].split("## Equivalent", 1)[0]
    assert names[2] in pending and names[3] in pending and names[1] not in pending
    assert names[2] not in text.split("## Surviving mutants (1)", 1)[1].split("## Not yet", 1)[0]
    # the next --rerun-alive runs the survivor and the unreached ones
    assert sorted(mutation.previous_run()[1]) == names[1:]
