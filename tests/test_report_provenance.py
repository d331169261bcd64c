"""Provenance of a report (report.provenance): git_dirty says whether the code changed, not
the reports."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

from grokverify.report import provenance as real


def test_provenance_dirty_means_code_not_reports(tmp_path: Path) -> None:
    """A report built from a clean commit says so even when reports/ has changed (a suite
    rebuilt claim by claim dirties reports/ as it goes); a changed code file makes it dirty."""
    repo = tmp_path / "repo"
    module = repo / "grokverify" / "report" / "provenance.py"
    module.parent.mkdir(parents=True)
    shutil.copy(real.__file__, module)
    (repo / "reports").mkdir()
    (repo / "reports" / "r.md").write_text("old\n")

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                       check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "c")
    spec = importlib.util.spec_from_file_location("copied_provenance", module)
    assert spec and spec.loader
    copied = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copied)
    assert copied.provenance()["git_dirty"] is False
    (repo / "reports" / "r.md").write_text("new\n")
    assert copied.provenance()["git_dirty"] is False
    module.write_text(module.read_text() + "\n# changed\n")
    assert copied.provenance()["git_dirty"] is True


def test_a_records_cpu_is_named_by_its_model(tmp_path: Path) -> None:
    """Records name the CPU model Linux reports (what a paper-scale report's cost was measured
    on), or the platform's word for it where there is no /proc/cpuinfo."""
    import platform

    from grokverify.run.execute import cpu_name

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n"
                    "processor\t: 1\nmodel name\t: AMD EPYC 7B13\n")
    assert cpu_name(info) == "AMD EPYC 7B13"
    assert cpu_name(tmp_path / "absent") == (platform.processor() or platform.machine())
