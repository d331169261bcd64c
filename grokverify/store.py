"""Content-addressed result store: one JSON record per (resolved experiment, seed, results
version, torch version, device type, numerics).

A record's key hashes what determines a seed's result (docs/store.md): the resolved experiment
(task, model, optimizer, training, probes, interventions), the seed, the engine's declared
results version (bumped whenever training's results change; a golden test guards it), the torch
version, the device type and the numerics tag (the pinned CPU kernels, or the host's own). So a
record is reused exactly when rerunning would reproduce it, and a refactor or a comment in the
engine does not re-key the store. Records are written to a temporary file in the same directory
and renamed into place, so a reader never sees half a record.
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
from importlib import metadata
from pathlib import Path
from typing import Any

from grokverify.atomic import write_atomic
from grokverify.engine import numerics
from grokverify.engine.version import RESULTS_VERSION
from grokverify.spec import ExperimentSpec

STALE_AFTER_S = 6 * 3600  # a lock from another host older than this is taken over
DEFAULT_STORE = Path(".grokverify") / "store"
_ENGINE = Path(__file__).parent / "engine"


@cache
def torch_version() -> str:
    """The installed torch's release (CPU and CUDA builds of one release share records only
    through the device type, which is keyed separately)."""
    return metadata.version("torch").split("+")[0]


@cache
def code_version() -> str:
    """A hash of the engine's source files: provenance only (which code wrote a record), not
    part of the key."""
    h = hashlib.sha256()
    for path in sorted(_ENGINE.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def environment(device_type: str) -> dict[str, str]:
    """The part of a record's key that is the process, not the experiment: the engine's results
    version, the torch release, the device type, the numerics. A worker must have the driver's
    (`grokverify.execute.run_trial` checks before it trains)."""
    return {"results_version": RESULTS_VERSION, "torch": torch_version(),
            "device": device_type, "numerics": numerics.tag(device_type)}


def key_inputs(exp: ExperimentSpec, seed: int, device_type: str) -> dict[str, Any]:
    """Everything a record's key hashes, as the record keeps it (so `verify` can re-hash)."""
    return {"experiment": exp.canonical(), "seed": int(seed), **environment(device_type)}


def hash_key(inputs: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def record_key(exp: ExperimentSpec, seed: int, device_type: str) -> str:
    return hash_key(key_inputs(exp, seed, device_type))


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
            if self._create_whole(path, body):
                return True
            if not self._stale(path):
                return False
            path.unlink(missing_ok=True)
        return False

    @staticmethod
    def _create_whole(path: Path, body: str) -> bool:
        """Create `path` holding `body`, or return False when it exists. The body is written to
        a private file first and hard-linked into place (atomic, and fails if the name exists),
        so no reader ever sees an empty or half-written lock: a lock read between its creation
        and its write used to look unreadable, hence stale, and was taken over."""
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".lock.")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(body)
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        return True

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
    other_version: int = 0  # valid records of another results version or torch: kept, not reused


def verify(store: Store) -> VerifyReport:
    """Re-hash every record from its own key inputs and list corrupt records and leftovers
    (temporary files of interrupted writes, stale locks)."""
    report = VerifyReport()
    records = store.root / "records"
    for path in sorted(records.rglob("*")) if records.is_dir() else []:
        if path.is_dir():
            continue
        if path.name.startswith(".") and path.suffix == ".tmp":
            report.orphaned.append((str(path), "temporary file of an interrupted write"))
            continue
        inputs, why = _check_record(path)
        if inputs is None:
            report.corrupt.append((str(path), why))
            continue
        report.ok += 1
        if (inputs["results_version"], inputs["torch"]) != (RESULTS_VERSION, torch_version()):
            report.other_version += 1
    locks = store.root / "locks"
    for path in sorted(locks.glob("*.lock")) if locks.is_dir() else []:
        if store._stale(path):
            report.orphaned.append((str(path), "lock of a process that is gone"))
    return report


def _check_record(path: Path) -> tuple[dict[str, Any] | None, str]:
    """(the record's key inputs, "") for a sound record, else (None, what is wrong): one read."""
    try:
        rec = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable: {exc}"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at line {exc.lineno})"
    try:
        inputs = rec["key_inputs"]
        exp = ExperimentSpec.model_validate(rec["experiment"])
        summary = rec["result"]["summary"]
        same_experiment = inputs["experiment"] == exp.canonical()
        same_seed = inputs["seed"] == rec["seed"]
        key = hash_key(inputs)
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"missing or invalid field: {exc}"
    if rec.get("key") != path.stem:
        return None, f"key field {rec.get('key')!r} differs from the file name"
    if key != path.stem or not same_experiment or not same_seed:
        return None, "content does not hash to its key (edited or corrupted)"
    if summary.get("seed") != rec["seed"]:
        return None, "summary seed differs from the record's seed"
    return inputs, ""
