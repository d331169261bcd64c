"""`grokverify run`'s guards before and around training (grokverify.run.preflight and the CLI):
argument errors, duplicate claim ids, a dead --address, unwritable folders found before
training, `--dry-run`, clean ends on SIGTERM and Ctrl-C (local executor and Ray), and report
text that a claim's strings cannot break."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import console_script, default_sigint
from markdown_it import MarkdownIt

from grokverify.cli import main
from grokverify.report.markdown import render_markdown

TINY = Path(__file__).resolve().parent / "fixtures" / "tiny_claim.yaml"


def _run(tmp_path: Path, *extra: str, claims: tuple[Path, ...] = (TINY,)) -> int:
    return main(["run", *map(str, claims), "--executor", "local", "--device", "cpu",
                 "--store", str(tmp_path / "store"), "--reports", str(tmp_path / "reports"),
                 *extra])


def _records(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "store").rglob("*.json"))


# ---------------------------------------------------------------- arguments and claims


@pytest.mark.parametrize("extra, words", [
    (("--address", "127.0.0.1"), "expected host:port"),
    (("--address", "host:99999"), "expected host:port"),
    (("--chunk-size", "0"), "--chunk-size must be >= 1"),
    (("--cpus-per-task", "0"), "--cpus-per-task must be >= 1"),
    (("--seeds", "0"), "--seeds must be >= 1"),
    (("--seeds", "1001"), "--seeds must be <= 1000"),
    (("--gpus-per-task", "nan"), "--gpus-per-task: expected auto or 0 < F <= 1, got nan"),
    (("--gpus-per-task", "1.5"), "--gpus-per-task: expected auto or 0 < F <= 1, got 1.5"),
    (("--gpus-per-task", "half"), "--gpus-per-task: expected auto or a number, got 'half'"),
    (("--gpu-memory", "0"), "--gpu-memory must be a positive number"),
    (("--max-trial-memory", "-1"), "--max-trial-memory must be a positive number"),
])
def test_bad_option_exits_2_before_anything(extra: tuple[str, ...], words: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, *extra) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "store").exists() and not (tmp_path / "reports").exists()


def test_unknown_scale_is_a_bad_argument(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, "--scale", "paper") == 2
    err = capsys.readouterr().err
    assert f"{TINY}:" in err and "no scale 'paper'" in err and "has: quick" in err


def test_two_claims_with_one_id_are_refused(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Both would write reports/tiny/ and mix up their trained/reused counts."""
    twin = tmp_path / "twin.yaml"
    twin.write_text(TINY.read_text().replace("c1: {}", "c1: {optimizer: {lr: 0.002}}"))
    assert _run(tmp_path, claims=(TINY, twin)) == 2
    err = capsys.readouterr().err
    assert f"{twin}:2: id: claim id 'tiny' is also the id of {TINY}" in err
    assert _run(tmp_path, claims=(TINY, TINY)) == 2
    assert "the same file twice" in capsys.readouterr().err
    assert not _records(tmp_path)


def test_unwritable_reports_is_found_before_training(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "reports").write_text("a file where the reports folder should be")
    assert _run(tmp_path) == 1
    out = capsys.readouterr().out
    assert "the report folder" in out and "cannot be written" in out
    assert not _records(tmp_path), "nothing may train when the report cannot be written"


def test_trial_over_the_memory_limit_is_refused_with_the_override_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, "--max-trial-memory", "1e-6") == 2
    err = capsys.readouterr().err
    assert f"{TINY}:" in err and "over the limit" in err
    assert not _records(tmp_path)


def test_a_dead_address_fails_fast(tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A plain TCP connect first: ray.init would hang for minutes on a dead address."""
    code = main(["run", str(TINY), "--address", "127.0.0.1:9", "--device", "cpu",
                 "--store", str(tmp_path / "s")])
    assert code == 1
    assert "cannot reach Ray at 127.0.0.1:9" in capsys.readouterr().out



# ---------------------------------------------------------------- dry run


def test_dry_run_says_what_would_train_and_trains_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, "--dry-run") == 0
    out = capsys.readouterr().out
    for phrase in ("tiny, scale quick (NOT the paper's setting)", "2 arm(s) × 3 seed(s)",
                   "0 stored, 6 to train in 2 trial(s) on cpu"):
        assert phrase in out, out
    assert "largest trial: about" in out and "nothing trained" in out
    assert not _records(tmp_path)
    assert not (tmp_path / "reports" / "tiny" / "report.md").exists()

    assert _run(tmp_path) == 0  # a real run, then the dry run sees the store
    capsys.readouterr()
    assert _run(tmp_path, "--dry-run") == 0
    assert "6 stored, 0 to train in 0 trial(s)" in capsys.readouterr().out


# ---------------------------------------------------------------- signals


def _long_claim(tmp_path: Path) -> Path:
    path = tmp_path / "long.yaml"
    path.write_text(TINY.read_text().replace("steps: 300, eval_interval: 10",
                                             "steps: 2000000, eval_interval: 1000"))
    return path


def _interrupt(tmp_path: Path, executor: str, sig: signal.Signals) -> tuple[int, str, str]:
    """Start a long run, wait until it trains, send `sig`; (exit code, stdout, stderr)."""
    cmd = [*console_script(), "run", str(_long_claim(tmp_path)), "--executor", executor,
           "--device", "cpu", "--store", str(tmp_path / "store"),
           "--reports", str(tmp_path / "reports")]
    log = tmp_path / "out.txt"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "COLUMNS": "200"},
                                preexec_fn=default_sigint)
        deadline = time.monotonic() + 120
        while "to train on" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.2)
        time.sleep(2.0)  # inside training (and, with Ray, inside its wait loop)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    return proc.returncode, log.read_text(), err


def _gv_ray_dirs() -> set[str]:
    return {p.name for p in Path("/tmp").glob("gv-ray-*")}


@pytest.mark.parametrize("sig, code, words", [
    (signal.SIGTERM, 143, "stopped by SIGTERM"),
    (signal.SIGINT, 130, "interrupted (Ctrl-C)"),
])
def test_signal_ends_a_local_run_cleanly(sig: signal.Signals, code: int, words: str,
                                         tmp_path: Path) -> None:
    rc, out, err = _interrupt(tmp_path, "local", sig)
    assert rc == code, err
    assert "to train on this process (1 thread(s)), device cpu" in out
    assert words in err and "Traceback" not in err
    assert not list((tmp_path / "store" / "locks").glob("*.lock")), "locks must be released"


@pytest.mark.ray
def test_sigterm_ends_a_ray_run_cleanly_and_removes_its_temp_folder(tmp_path: Path) -> None:
    """Ray's driver handles SIGTERM itself (a C stack dump, exit 134) unless the CLI keeps its
    own handler; the run's Ray folder in /tmp goes with it."""
    before = _gv_ray_dirs()
    rc, out, err = _interrupt(tmp_path, "ray", signal.SIGTERM)
    assert rc == 143, err
    # where it trains is said once Ray is up, from what Ray reports (not assumed beforehand)
    assert "to train on a local Ray (" in out and "GPU), device cpu" in out
    assert "stopped by SIGTERM" in err
    assert "SIGTERM received" not in err and "Traceback" not in err
    assert not list((tmp_path / "store" / "locks").glob("*.lock"))
    assert _gv_ray_dirs() <= before, "the run's gv-ray-* folder was left in /tmp"


# ---------------------------------------------------------------- report text


HOSTILE = "c10 | x\n# INJECTED <script>alert(1)</script> [link](http://x) `code` *em*\n1. two"


def _blocks(markdown: str) -> list[str]:
    """The block structure of a Markdown text (headings, paragraphs, lists, tables and their
    rows and cells, HTML), without the inline content."""
    return [t.type for t in MarkdownIt("commonmark").enable("table").parse(markdown)
            if t.type != "inline"]


def test_report_markdown_cannot_be_broken_by_claim_text(tmp_path: Path) -> None:
    """Names and prose from a claim (title, statement, quote, notes, arm and scale names,
    descriptions, the reason) show as written: the report's block structure is the same as
    without them (no new heading, list or table row), with no HTML and no link."""
    assert _run(tmp_path) == 0
    res = json.loads((tmp_path / "reports" / "tiny" / "result.json").read_text())
    res["claim"]["notes"] = "A note."  # the tiny claim has none: its section would be new
    plain = render_markdown(res)
    for key in ("title", "statement", "notes"):
        res["claim"][key] += HOSTILE
    for part, key in (("source", "quote"), ("source", "where")):
        res["claim"][part][key] += HOSTILE
    res["scale"]["description"] += HOSTILE
    res["scale"]["name"] += HOSTILE
    res["reason"] += HOSTILE
    rename = {name: name + HOSTILE for name in res["arms"]}
    res["arms"] = {rename[k]: v for k, v in res["arms"].items()}
    for row in res["result"]["arms"]:
        row["name"] = rename[row["name"]]
    for row in res["per_seed"]:
        row["arm"] = rename[row["arm"]]
    for role in ("baseline", "treated"):
        res["criterion"][role] = rename[res["criterion"][role]]
    hostile = render_markdown(res)

    assert _blocks(hostile) == _blocks(plain)
    tokens = MarkdownIt("commonmark").enable("table").parse(hostile)
    inline = [c for t in tokens for c in (t.children or [])]
    assert not [t.type for t in [*tokens, *inline]
                if t.type in ("html_block", "html_inline", "link_open")]
    rendered = MarkdownIt("commonmark").enable("table").render(hostile)
    assert "<script>" not in rendered  # as text (or verbatim in a code span), never a tag
    assert "c10 | x # INJECTED &lt;script&gt;" in rendered  # shown as written, as text


def test_the_limit_override_lets_a_big_claim_through(capsys: pytest.CaptureFixture[str]) -> None:
    """A claim over the default memory limit is refused, and loads on a machine that says it is
    big enough (the same flag as `run`)."""
    big = Path(__file__).resolve().parent / "bad_claims" / "limit_trial_memory.yaml"
    assert main(["validate", str(big)]) == 2
    assert "over the limit of 16 GiB" in capsys.readouterr().err
    assert main(["validate", str(big), "--max-trial-memory", "64"]) == 0
    assert main(["validate", str(big), "--max-trial-memory", "inf"]) == 2


def test_a_raising_trial_in_process_is_named_and_the_others_stored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The local executor as Ray's: the arm that raised is named with its seeds (no traceback),
    exit 1, and the other arm's records are in the store for the next run."""
    from grokverify.engine import loop

    real = loop.train_seeds

    def flaky(exp: Any, seeds: list[int], *args: Any) -> Any:
        if exp.optimizer.emb_lr_mult == 10:
            raise FloatingPointError("boom")
        return real(exp, seeds, *args)

    monkeypatch.setattr(loop, "train_seeds", flaky)
    assert _run(tmp_path) == 1
    out = capsys.readouterr().out
    assert "tiny: arm c10, seeds [0, 1, 2] failed: FloatingPointError: boom" in " ".join(
        out.split())
    assert "Traceback" not in out
    assert len(_records(tmp_path)) == 3  # c1's three seeds
