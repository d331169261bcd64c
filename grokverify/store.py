"""Content-addressed result store: one JSON record per (resolved experiment, seed, code version).

The key is a hash of everything that determines a seed's result, so a record is reused exactly
when rerunning would reproduce it, and changing any setting trains afresh. Records are written
to a temporary file in the same directory and renamed into place, so a reader never sees half a
record.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import torch

from grokverify.spec import ExperimentSpec

# Modules whose source changes what a seed's training produces.
_RESULT_MODULES = ("tasks", "models", "optim", "train", "rng")
DEFAULT_STORE = Path(".grokverify") / "store"


@cache
def code_version() -> str:
    """Hash of the result-affecting source files and the torch version."""
    here = Path(__file__).parent
    h = hashlib.sha256(f"torch={torch.__version__.split('+')[0]}".encode())
    for name in _RESULT_MODULES:
        h.update((here / f"{name}.py").read_bytes())
    return h.hexdigest()[:16]


def record_key(exp: ExperimentSpec, seed: int, device_type: str) -> str:
    """CPU and GPU results differ in the last bits, so the device type is part of the key."""
    payload = f"{exp.canonical()}|seed={seed}|code={code_version()}|device={device_type}"
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class Store:
    root: Path

    def path_for(self, key: str) -> Path:
        return self.root / "records" / key[:2] / f"{key}.json"

    def has(self, key: str) -> bool:
        return self.path_for(key).is_file()

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.path_for(key).read_text())
        except FileNotFoundError:
            return None

    def put(self, key: str, record: dict[str, Any]) -> Path:
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({**record, "key": key}, sort_keys=True, allow_nan=False)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path
