"""`grokverify report`: a claim's report and its suite rebuilt from the store, training
nothing and writing nothing to the store; seeds the store lacks are named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from suitedata import TINY, tiny_run

import grokverify.run.pipeline
from grokverify.cli import main


def refuse_executors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to start an executor (Ray or local) fails the test (the stored run is
    made first)."""
    tiny_run()

    def refuse(*args: object, **kw: object) -> None:
        raise AssertionError("an executor was started")
    monkeypatch.setattr(grokverify.run.pipeline, "_make_executor", refuse)


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_executors(monkeypatch)


def _store_files(store: Path) -> dict[str, int]:
    return {str(p.relative_to(store)): p.stat().st_mtime_ns for p in store.rglob("*")}


def _comparable(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "provenance"}


def rebuild(tmp_path: Path, *args: str) -> int:
    """`grokverify report` of `args` from the tiny claim's store into tmp_path/rebuilt."""
    return main(["report", *args, "--store", str(tiny_run() / "store"), "--reports",
                 str(tmp_path / "rebuilt"), "--device", "cpu"])


def test_report_rebuilds_what_run_wrote(tmp_path: Path, no_training: None,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    before = _store_files(tiny_run() / "store")
    assert rebuild(tmp_path, str(TINY)) == 0
    out = capsys.readouterr().out
    assert "rebuilt tiny: INCONCLUSIVE (6 seed records from the store)" in out
    assert "1 of 1 claim(s) rebuilt" in out and "nothing trained" in out
    ran = json.loads((tiny_run() / "reports" / "tiny" / "result.json").read_text())
    rebuilt = json.loads((tmp_path / "rebuilt" / "tiny" / "result.json").read_text())
    assert _comparable(rebuilt) == _comparable(ran)
    assert rebuilt["provenance"]["seeds_trained_now"] == 0
    assert rebuilt["provenance"]["seeds_reused"] == 6
    for name in ("report.md", "curves.png", "survival.png", "pairs.png"):
        assert (tmp_path / "rebuilt" / "tiny" / name).is_file()
    for name in ("results.json", "index.md", "index.html"):
        assert (tmp_path / "rebuilt" / name).is_file()
    assert _store_files(tiny_run() / "store") == before  # nothing written, nothing locked


def test_missing_seeds_are_named_and_nothing_is_trained(
        tmp_path: Path, no_training: None, capsys: pytest.CaptureFixture[str]) -> None:
    before = _store_files(tiny_run() / "store")
    assert rebuild(tmp_path, str(TINY), "--seeds", "5") == 1
    out = capsys.readouterr().out
    assert "NOT REBUILT tiny: no record in the store for c1 seeds 3, 4; c10 seeds 3, 4" in out
    assert "report not written" in out and "0 of 1 claim(s) rebuilt" in out
    assert not (tmp_path / "rebuilt").exists()
    assert _store_files(tiny_run() / "store") == before


def test_a_store_that_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["report", str(TINY), "--store", str(tmp_path / "nothing"), "--reports",
                 str(tmp_path / "r")])
    assert code == 1 and "no store at" in capsys.readouterr().out


def test_format_chooses_the_suite_files(tmp_path: Path, no_training: None) -> None:
    assert rebuild(tmp_path, str(TINY), "--format", "md,json") == 0
    assert {p.name for p in (tmp_path / "rebuilt").iterdir()} == {
        "tiny", "index.md", "results.json", "forest.png"}  # the figure index.md links
    with pytest.raises(SystemExit):
        rebuild(tmp_path, str(TINY), "--format", "pdf")


def test_claims_rebuilt_side_by_side_equal_one_by_one(tmp_path: Path, no_training: None) -> None:
    """`report` rebuilds claims in worker processes: the same reports, in the claims' order,
    as one process; a claim whose seeds are missing is named from a worker too."""
    from rich.console import Console

    from grokverify.claim.load import load_claim
    from grokverify.run.outcome import RunOptions
    from grokverify.run.rebuild import rebuild_claims

    twin = tmp_path / "twin.yaml"
    twin.write_text(TINY.read_text().replace("id: tiny", "id: tiny_twin", 1))
    more = tmp_path / "more.yaml"  # asks for seeds the store lacks
    more.write_text(TINY.read_text().replace("id: tiny", "id: tiny_more", 1)
                    .replace("seeds: 3", "seeds: 4", 1))
    claims = [load_claim(p) for p in (TINY, more, twin)]
    got = {}
    for workers in (1, 2):
        opts = RunOptions(store=tiny_run() / "store", reports=tmp_path / f"w{workers}",
                          executor="local", device="cpu", chunk_size=1)
        done = rebuild_claims(claims, opts, Console(quiet=True), workers=workers)
        assert [d.claim_id for d in done] == ["tiny", "tiny_more", "tiny_twin"]
        assert done[1].result_json is None and "seeds 3" in done[1].missing
        got[workers] = {d.claim_id: _comparable(json.loads(d.result_json.read_text()))
                        for d in done if d.result_json is not None}
    assert got[1] == got[2] and set(got[2]) == {"tiny", "tiny_twin"}



WORKER_SIGNALS = """
import signal, sys
from grokverify.cli import _raise_terminated
from grokverify.run.rebuild import worker_pool

def handlers(_):
    return (signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _raise_terminated)  # as the CLI runs
    with worker_pool(sys.argv[1], 2) as pool:
        print(set(pool.map(handlers, range(4))))
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_rebuild_workers_leave_signals_to_the_parent(method: str, tmp_path: Path) -> None:
    """A worker forked with the CLI's SIGTERM handler would print a traceback when the pool
    ends it (`Pool.terminate`): workers ignore Ctrl-C (the parent has it) and die at SIGTERM."""
    script = tmp_path / "workers.py"
    script.write_text(WORKER_SIGNALS)
    proc = subprocess.run([sys.executable, str(script), method], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "{(True, True)}"


def test_beside_shows_another_scales_suite_and_refuses_a_bad_one(
        tmp_path: Path, no_training: None, capsys: pytest.CaptureFixture[str]) -> None:
    """--beside SUITE: each claim's verdict at the other suite's scale in its own column, and
    both on its forest strip; a path that is no suite is refused before anything is rebuilt."""
    assert rebuild(tmp_path, str(TINY), "--beside", str(tmp_path / "nowhere")) == 2
    assert "--beside" in capsys.readouterr().err
    assert not (tmp_path / "rebuilt").exists()
    other = tmp_path / "paper"
    assert main(["report", str(TINY), "--store", str(tiny_run() / "store"), "--reports",
                 str(other), "--device", "cpu", "--format", "json"]) == 0
    suite = json.loads((other / "results.json").read_text())
    suite["claims"][0].update(scale="paper", paper_setting=True, verdict="REFUTED")
    (other / "results.json").write_text(json.dumps(suite))
    assert rebuild(tmp_path, str(TINY), "--beside", str(other)) == 0
    row = json.loads((tmp_path / "rebuilt" / "results.json").read_text())["claims"][0]
    assert row["beside"]["verdict"] == "REFUTED" and row["beside"]["scale"] == "paper"
    assert (tmp_path / "rebuilt" / row["beside"]["result_json"]).resolve() == (
        other / "tiny" / "result.json").resolve()
    html = (tmp_path / "rebuilt" / "index.html").read_text()
    table = html[html.index('<table id="verdicts">'):html.index("</table>")]
    assert "<th scope=\"col\">other scale</th>" in table
    assert "paper (the paper&#x27;s setting): REFUTED" in table or \
        "paper (the paper's setting): REFUTED" in table
    strip = table[table.index("<td", table.index("<tbody>")):]
    strip = strip[strip.index("<svg", strip.index('data-sort="')):]
    strip = strip[:strip.index("</svg>")]
    assert strip.count("<line x1") == 3  # the boundary, and one CI for each scale
    md = (tmp_path / "rebuilt" / "index.md").read_text()
    assert "| other scale |" in md
