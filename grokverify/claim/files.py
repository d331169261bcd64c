"""Claim arguments → claim files: a file is itself, a folder every `*.yaml` below it.

A library is a folder (`grokverify run claims/`), so `validate`, `run` and `report` take folders
as well as files; the order is sorted within a folder so a suite's sections and a run's trials
come out the same every time.
"""

from __future__ import annotations

from pathlib import Path

PAPERS_DIR = "papers"  # below a claims folder: paper files (grokverify.claim.paper), not claims
DRAFTS_DIR = "drafts"  # below a claims folder: claims not yet run (claims/drafts/README.md)


def is_paper_file(path: Path) -> bool:
    """A YAML file in a claims folder's `papers/` folder: validated as a paper, not a claim."""
    return path.parent.name == PAPERS_DIR and path.suffix == ".yaml" and path.is_file()


class NoClaims(ValueError):
    """A folder with no claim file below it: almost always a wrong path (exit 2)."""


def claim_files(paths: list[Path]) -> list[Path]:
    """Each file as given; each folder's `*.yaml` files, recursively, sorted, but for its paper
    files (a `papers/` folder: grokverify.claim.paper) and drafts (a `drafts/` folder below it,
    read only when given itself). A missing path is passed on as a file, so the claim loader
    names it the way it names any unreadable file."""
    files: list[Path] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        found = sorted(p for p in path.rglob("*.yaml") if p.is_file() and not {
            PAPERS_DIR, DRAFTS_DIR} & set(p.relative_to(path).parts[:-1]))
        if not found:
            raise NoClaims(f"{path}: a directory with no claim files (*.yaml) in it or below it")
        files += found
    return files
