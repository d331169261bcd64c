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
import platform
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch

from grokverify.atomic import write_atomic
from grokverify.spec import ExperimentSpec

STALE_AFTER_S = 6 * 3600  # a lock from another host older than this is taken over
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


def record_key(exp: ExperimentSpec, seed: int, device_type: str, code: str | None = None) -> str:
    """CPU and GPU results differ in the last bits, so the device type is part of the key."""
    payload = f"{exp.canonical()}|seed={seed}|code={code or code_version()}|device={device_type}"
    return hashlib.sha256(payload.encode()).hexdigest()


class StoreError(OSError):
    """The store cannot be used (unwritable, full); the CLI reports it and exits 1."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

    def check_writable(self) -> None:
        """Fail before any training when the store cannot take records."""
        try:
            (self.root / "records").mkdir(parents=True, exist_ok=True)
            (self.root / "locks").mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self.root, prefix=".probe.")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise StoreError(f"store {self.root} is not writable: {exc.strerror or exc}") from None

    # ------------------------------------------------------------ locks (one per record key)

    def lock_path(self, key: str) -> Path:
        return self.root / "locks" / f"{key}.lock"

    def try_lock(self, key: str) -> bool:
        """Claim a key for training: an exclusive lock file holding our host and pid. A lock
        left by a dead process on this host (a crash, a SIGKILL) is stale and is taken over;
        a lock from another host is honoured until it is STALE_AFTER_S old."""
        path = self.lock_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"host": platform.node(), "pid": os.getpid(), "time": time.time()})
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self._stale(path):
                    return False
                path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(body)
            return True
        return False

    def _stale(self, path: Path) -> bool:
        try:
            owner = json.loads(path.read_text())
            age = time.time() - path.stat().st_mtime
        except (OSError, ValueError):
            return True  # unreadable or half-written lock: its writer died mid-write
        if owner.get("host") == platform.node():
            return not _pid_alive(int(owner.get("pid", -1)))
        return age > STALE_AFTER_S

    def unlock(self, key: str) -> None:
        self.lock_path(key).unlink(missing_ok=True)

    def locked_by_other(self, key: str) -> bool:
        path = self.lock_path(key)
        return path.exists() and not self._stale(path)

    def put(self, key: str, record: dict[str, Any]) -> Path:
        path = self.path_for(key)
        body = json.dumps({**record, "key": key}, sort_keys=True, allow_nan=False)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, body, fsync=True)
        except OSError as exc:
            raise StoreError(f"cannot write record {path}: {exc.strerror or exc}") from None
        return path


@dataclass
class VerifyReport:
    ok: int = 0
    corrupt: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    orphaned: list[tuple[str, str]] = field(default_factory=list)
    older_code: int = 0  # valid records of another code version: kept, but not reused now


def verify(store: Store) -> VerifyReport:
    """Re-hash every record from its own content (experiment, seed, code version, device) and
    list corrupt records and leftovers (temporary files of interrupted writes, stale locks)."""
    report = VerifyReport()
    records = store.root / "records"
    for path in sorted(records.rglob("*")) if records.is_dir() else []:
        if path.is_dir():
            continue
        if path.name.startswith(".") and path.suffix == ".tmp":
            report.orphaned.append((str(path), "temporary file of an interrupted write"))
            continue
        why = _check_record(path)
        if why:
            report.corrupt.append((str(path), why))
            continue
        report.ok += 1
        if json.loads(path.read_text())["code_version"] != code_version():
            report.older_code += 1
    locks = store.root / "locks"
    for path in sorted(locks.glob("*.lock")) if locks.is_dir() else []:
        if store._stale(path):
            report.orphaned.append((str(path), "lock of a process that is gone"))
    return report


def _check_record(path: Path) -> str | None:
    try:
        rec = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        return f"unreadable: {exc}"
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg} at line {exc.lineno})"
    try:
        exp = ExperimentSpec.model_validate(rec["experiment"])
        key = record_key(exp, int(rec["seed"]), rec["device"], rec["code_version"])
        summary = rec["result"]["summary"]
    except (KeyError, TypeError, ValueError) as exc:
        return f"missing or invalid field: {exc}"
    if rec.get("key") != path.stem:
        return f"key field {rec.get('key')!r} differs from the file name"
    if key != path.stem:
        return "content does not hash to its key (edited or corrupted)"
    if summary.get("seed") != rec["seed"]:
        return "summary seed differs from the record's seed"
    return None
