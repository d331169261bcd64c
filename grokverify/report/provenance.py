"""Where a verdict came from: code commit, package versions, machine."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

_PACKAGES = ("grokverify", "torch", "numpy", "scipy", "statsmodels", "pydantic", "ray", "rich",
             "matplotlib", "pyyaml")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def provenance() -> dict[str, Any]:
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    # changes under reports/ are output, not code: a suite rebuilt claim by claim (in parallel)
    # dirties the tree as it goes, and its later reports must not say the code was changed
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ":(top)",
                  ":(top,exclude)reports")
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "packages": versions,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": platform.node(),
    }
