"""Content-addressed result store: one JSON record per seed, keyed by what determines its
result, carrying a digest of its own content that every read checks; locks per key; `verify`.

Key policy, record fields, integrity model and locks: docs/store.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from grokverify.atomic import probe_writable, write_atomic
from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine import numerics
from grokverify.engine.datasets import load as load_data
from grokverify.engine.version import RESULTS_VERSION
from grokverify.kinds import plugins_used

STALE_AFTER_S = 6 * 3600  # a lock from another host older than this is taken over
DEFAULT_STORE = Path(".grokverify") / "store"
LOG_NAME = "log.jsonl"
_ENGINE = Path(__file__).parent / "engine"
_RECORD_NAME = re.compile(r"[0-9a-f]{64}\.json")
_LOCK_NAME = re.compile(r"[0-9a-f]{64}\.lock")
_SHARD_NAME = re.compile(r"[0-9a-f]{2}")


@cache
def torch_version() -> str:
    """The installed torch's release, without its build suffix (the device type is keyed
    separately)."""
    return metadata.version("torch").split("+")[0]


@cache
def code_version() -> str:
    """A hash of the engine's source files: provenance only, not part of the key."""
    h = hashlib.sha256()
    for path in sorted(_ENGINE.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def environment(device_type: str) -> dict[str, str]:
    """The part of a record's key that is the process, not the experiment. A worker must have
    the driver's (`grokverify.run.execute.run_trial` checks before it trains)."""
    return {"results_version": RESULTS_VERSION, "torch": torch_version(),
            "device": device_type, "numerics": numerics.tag(device_type)}


def process_part(exp: ExperimentSpec, device_type: str) -> dict[str, str]:
    """`environment`, plus the digest of a file-read task's data, so records made from two
    copies of a dataset never share a key, and each used plugin's results version, so a new
    version never reuses the old one's records (no other key changes); a worker whose part
    differs from the driver's refuses the trial."""
    name = exp.task.data_name()
    data = {"data": load_data(name).digest} if name is not None else {}
    used = plugins_used(exp)
    return {**environment(device_type), **data, **({"plugins": used} if used else {})}


def key_inputs(exp: ExperimentSpec, seed: int, device_type: str) -> dict[str, Any]:
    """Everything a record's key hashes, as the record keeps it (so `verify` can re-hash)."""
    return {"experiment": exp.canonical(), "seed": int(seed), **process_part(exp, device_type)}


def hash_key(inputs: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def record_key(exp: ExperimentSpec, seed: int, device_type: str) -> str:
    return hash_key(key_inputs(exp, seed, device_type))


def record_keys(exp: ExperimentSpec, seeds: tuple[int, ...] | list[int],
                device_type: str) -> tuple[str, ...]:
    """`record_key` of each seed, the canonical JSON and process part computed once: per
    seed they would dominate planning a claim of thousands of seeds."""
    inputs = key_inputs(exp, 0, device_type)
    return tuple(hash_key({**inputs, "seed": int(s)}) for s in seeds)


def content_digest(record: dict[str, Any]) -> str:
    """SHA-256 of the record's sorted compact JSON without its digest field, hashed as parsed
    from disk so that writer and reader hash the same thing."""
    body = {k: v for k, v in record.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


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
class _Lock:
    """One lock file as read through one open file (body None when unreadable): inode and
    body tell the lock a takeover judged from a successor's."""

    inode: int
    mtime: float
    body: bytes | None


def _read_lock(path: Path) -> _Lock | None:
    """The lock at `path`, or None when there is none."""
    try:
        try:
            with path.open("rb") as fh:
                st = os.fstat(fh.fileno())
                return _Lock(st.st_ino, st.st_mtime, fh.read())
        except PermissionError:  # judged by its age alone
            st = path.stat()
            return _Lock(st.st_ino, st.st_mtime, None)
    except FileNotFoundError:
        return None


def _judge_stale(lock: _Lock) -> bool:
    """Stale: a dead pid of this host, or not JSON (locks are created whole). Another host's,
    an unreadable one or one naming no usable pid is honoured until STALE_AFTER_S old."""
    if lock.body is None:
        return time.time() - lock.mtime > STALE_AFTER_S
    try:
        owner = json.loads(lock.body)
        pid = owner.get("pid")
        # os.kill(0 or -1, 0) asks about a whole group and always answers "alive"
        if owner.get("host") == platform.node() and isinstance(pid, int) and pid > 0:
            return not _pid_alive(pid)
    except (ValueError, AttributeError, TypeError):
        return True
    return time.time() - lock.mtime > STALE_AFTER_S


@dataclass(frozen=True)
class Store:
    """A store at `root`, with what this process found in it (damaged records, sound files)."""

    root: Path
    # key -> why, for every record this process found damaged (read as absent, so retrained)
    damaged: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    _told: set[str] = field(default_factory=set, init=False, compare=False, repr=False)
    # key -> (inode, size, mtime_ns) of each record file this process has found sound
    _sound: dict[str, tuple[int, int, int]] = field(default_factory=dict, init=False,
                                                    compare=False, repr=False)

    def path_for(self, key: str) -> Path:
        return self.root / "records" / key[:2] / f"{key}.json"

    @property
    def log_path(self) -> Path:
        return self.root / LOG_NAME

    def has(self, key: str) -> bool:
        """True only for a sound record (a damaged one is to be retrained)."""
        return self.get(key) is not None

    def get(self, key: str) -> dict[str, Any] | None:
        """The record, checked; None when absent or damaged (then remembered in `damaged`). A
        file already found sound that is still the same file (inode, size, mtime in ns) is only
        parsed again: a run reads each record up to three times."""
        try:
            with self.path_for(key).open() as fh:  # decoded as read_record's read_text
                st = os.fstat(fh.fileno())
                text = fh.read()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            rec, why = None, _unreadable(exc)
        else:
            seen = (st.st_ino, st.st_size, st.st_mtime_ns)  # of the file just read
            if self._sound.get(key) == seen:
                return json.loads(text)
            rec, _, why = judge_record(text, key)
        if rec is None:
            self.damaged[key] = why
            self._sound.pop(key, None)
        else:
            self._sound[key] = seen
        return rec

    def newly_damaged(self) -> dict[str, str]:
        """Damaged records found since the last call, so a run names each one once."""
        news = {k: why for k, why in self.damaged.items() if k not in self._told}
        self._told.update(news)
        return news

    def check_writable(self) -> None:
        """Fail before any training when the store cannot take records."""
        try:
            for folder in ("records", "locks"):
                probe_writable(self.root / folder)
        except OSError as exc:
            raise StoreError(f"store {self.root} is not writable: {exc.strerror or exc}") from None

    def put(self, key: str, record: dict[str, Any], fsync: bool = True) -> Path:
        """Write the record with its key and a fresh digest (replacing any damaged one), then
        log it. With `fsync` False it is whole for readers at once, durable once `sync`ed."""
        path = self.path_for(key)
        text = json.dumps({**record, "key": key}, sort_keys=True, allow_nan=False)
        body = json.loads(text)  # what a reader will parse
        body.pop("digest", None)  # a record copied from a store is digested afresh
        digest = content_digest(body)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps({**body, "digest": digest}, sort_keys=True),
                         fsync=fsync)
        except OSError as exc:
            raise StoreError(f"cannot write record {path}: {exc.strerror or exc}") from None
        self._log({"time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   "key": key, "digest": digest, "seed": body.get("seed"),
                   "results_version": body.get("results_version"), "host": platform.node()})
        return path

    def sync(self, paths: list[Path]) -> None:
        """fsync records written with `put(..., fsync=False)`. One that cannot be synced (a full
        disk on a filesystem that allocates late) is removed; the first failure is raised once all
        are tried."""
        failed: OSError | None = None
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                path.unlink(missing_ok=True)
                failed = failed or exc
        if failed is not None:
            raise StoreError(f"cannot sync a record: {failed.strerror or failed}") from None

    def _log(self, entry: dict[str, Any]) -> None:
        """Append one line in one write (O_APPEND: whole lines from concurrent writers on a
        local filesystem; a line is far below the size a write splits at)."""
        line = (json.dumps(entry, sort_keys=True) + "\n").encode()
        try:
            fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                written = os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(f"cannot append to {self.log_path}: {exc.strerror or exc}") from None
        if written != len(line):
            raise StoreError(f"cannot append to {self.log_path}: short write (disk full?)")

    # ------------------------------------------------------------ locks (one per record key)

    def lock_path(self, key: str) -> Path:
        return self.root / "locks" / f"{key}.lock"

    def try_lock(self, key: str) -> bool:
        """Claim a key for training; a stale lock (`_judge_stale`) is taken over, by at most one
        process."""
        path = self.lock_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"host": platform.node(), "pid": os.getpid(), "time": time.time(),
                           "token": secrets.token_hex(8)})
        for _ in range(3):
            if self._create_whole(path, body):
                return True
            lock = _read_lock(path)
            if lock is None:
                continue  # released meanwhile
            if not _judge_stale(lock) or not self._set_aside(path, lock):
                return False
        return False

    @staticmethod
    def _create_whole(path: Path, body: str) -> bool:
        """Create `path` holding `body`, or return False when it exists: hard-linked from a
        private file, so no reader sees an empty lock (it would look stale); the umask's
        permissions, not mkstemp's 0600, so the store's other users can read it, hence honour it."""
        tmp = path.with_name(f".lock.{secrets.token_hex(8)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(body)
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        return True

    @staticmethod
    def _set_aside(path: Path, judged: _Lock) -> bool:
        """Move the stale lock `judged` aside, so that one of its judges replaces it; a
        successor's lock moved by a judge too late is put back (docs/store.md, "Locks").
        Returns whether to try creating ours."""
        aside = path.with_name(f".stale.{path.name}.{secrets.token_hex(8)}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return True  # another process moved it first; creating ours decides who wins
        moved = _read_lock(aside)
        if moved == judged:
            aside.unlink()
            return True
        # not ours to remove: put it back, unless a third process locked in the meantime
        with contextlib.suppress(FileExistsError):
            os.link(aside, path)
        aside.unlink()
        return False

    def unlock(self, key: str) -> None:
        self.lock_path(key).unlink(missing_ok=True)

    def locked_by_other(self, key: str) -> bool:
        lock = _read_lock(self.lock_path(key))
        return lock is not None and not _judge_stale(lock)


def read_record(path: Path, key: str) -> tuple[dict[str, Any] | None, str, str]:
    """(record, "", "") for a sound record filed at `path` under `key`, else (None, kind, why);
    FileNotFoundError when there is none."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        return None, "unreadable", _unreadable(exc)
    return judge_record(text, key)


def _unreadable(exc: OSError | UnicodeDecodeError) -> str:
    return f"unreadable ({getattr(exc, 'strerror', None) or exc})"


def judge_record(text: str, key: str) -> tuple[dict[str, Any] | None, str, str]:
    """`read_record`'s answer for a record file's text: the digest vouches for the parsed
    content, and the bytes must be the ones `put` wrote (so no edit goes unseen)."""
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, "invalid-json", (f"not valid JSON ({exc.msg} at line {exc.lineno} column "
                                      f"{exc.colno}; truncated?)")
    kind, why = _check_record(rec, key)
    if not kind and text != json.dumps(rec, sort_keys=True):
        kind, why = "reformatted", ("not the bytes its writer wrote, though it parses to what the "
                                    "digest vouches for (reformatted, or a digit past float "
                                    "precision edited)")
    return (rec, "", "") if not kind else (None, kind, why)


_CANONICAL: dict[str, str] = {}  # JSON of a record's experiment -> its canonical JSON


def _canonical_of(experiment: Any) -> str:
    """The canonical JSON of a record's experiment (ValueError when it is not one), remembered:
    an arm's records share it, and validating it per seed would dominate a rebuild."""
    text = json.dumps(experiment, sort_keys=True)
    hit = _CANONICAL.get(text)
    if hit is None:
        if len(_CANONICAL) >= 4096:
            _CANONICAL.clear()
        hit = _CANONICAL[text] = ExperimentSpec.model_validate(experiment).canonical()
    return hit


def _check_record(rec: Any, key: str) -> tuple[str, str]:
    """("", "") for a sound record under `key`, else (kind, why): structural checks first (they
    name what is wrong more precisely), then the digest."""
    if not isinstance(rec, dict):
        return "invalid-json", "not a JSON object"
    if rec.get("key") != key:
        return "key-mismatch", f"key field {rec.get('key')!r} differs from the file name"
    try:
        inputs = rec["key_inputs"]
        summary = rec["result"]["summary"]
        consistent = (hash_key(inputs) == key
                      and _canonical_of(rec["experiment"]) == inputs["experiment"]
                      and inputs["seed"] == rec["seed"] == summary["seed"])
    except (KeyError, TypeError, ValueError) as exc:
        return "invalid-record", f"missing or invalid field: {exc}"
    if not consistent:
        return "invalid-record", "content does not hash to its key (edited or corrupted)"
    if "digest" not in rec:
        return "no-digest", "no digest (written by an older grokverify)"
    if rec["digest"] != content_digest(rec):
        return "digest-mismatch", "content does not match its digest (edited or corrupted)"
    return "", ""


# ---------------------------------------------------------------- verify

# the finding kinds: docs/store.md, "grokverify store verify"
RECORD_DAMAGE = frozenset({"unreadable", "invalid-json", "key-mismatch", "invalid-record",
                           "no-digest", "digest-mismatch", "reformatted",
                           "changed-since-written"})
LOG_PROBLEMS = frozenset({"bad-log", "unlogged", "no-log"})
# every other kind is a leftover: temp-file, stale-lock, stray-file, unknown-dir


@dataclass(frozen=True)
class Finding:
    kind: str
    path: str
    why: str


@dataclass
class VerifyReport:
    ok: int = 0
    other_version: int = 0  # sound records of another results version or torch: kept, not reused
    findings: list[Finding] = field(default_factory=list)

    def add(self, kind: str, path: Path | str, why: str) -> None:
        self.findings.append(Finding(kind, str(path), why))

    def _where(self, kinds: frozenset[str], inside: bool) -> list[tuple[str, str]]:
        return [(f.path, f.why) for f in self.findings if (f.kind in kinds) is inside]

    @property
    def corrupt(self) -> list[tuple[str, str]]:
        """Damaged records: (path, why)."""
        return self._where(RECORD_DAMAGE, True)

    @property
    def log_problems(self) -> list[tuple[str, str]]:
        return self._where(LOG_PROBLEMS, True)

    @property
    def orphaned(self) -> list[tuple[str, str]]:
        """Everything else that is neither a sound record nor a live lock."""
        return self._where(RECORD_DAMAGE | LOG_PROBLEMS, False)


def verify(store: Store) -> VerifyReport:
    """Check every record as a read does, cross-check it with the log, and list everything in
    the store that is neither a sound record nor a live lock."""
    report = VerifyReport()
    logged = _read_log(store.log_path, report)
    for entry in sorted(store.root.iterdir()):
        if entry.name == "records" and entry.is_dir():
            _verify_records(entry, logged, report)
        elif entry.name == "locks" and entry.is_dir():
            _verify_locks(entry, report)
        elif entry.name == LOG_NAME and entry.is_file():
            continue
        elif entry.name.startswith(".probe."):
            report.add("temp-file", entry, "probe of an interrupted writability check")
        else:
            _stray(entry, report)
    if logged is None and report.ok:
        report.add("no-log", store.log_path, f"missing, so {report.ok} record(s) cannot be "
                   f"cross-checked (the log was deleted, or the records copied in)")
    return report


def _stray(path: Path, report: VerifyReport) -> None:
    if path.is_dir() and not path.is_symlink():
        report.add("unknown-dir", path, "a directory the store does not use")
    else:
        report.add("stray-file", path, "not part of the store")


def _verify_records(records: Path, logged: dict[str, set[str]] | None,
                    report: VerifyReport) -> None:
    """Check records/<2 hex>/<key>.json, and that nothing else is there."""
    for shard in sorted(records.iterdir()):
        if not (shard.is_dir() and _SHARD_NAME.fullmatch(shard.name)):
            _stray(shard, report)
            continue
        for path in sorted(shard.iterdir()):
            if path.name.startswith(".") and path.name.endswith(".tmp") and path.is_file():
                report.add("temp-file", path, "temporary file of an interrupted write")
            elif not (_RECORD_NAME.fullmatch(path.name) and path.is_file()):
                _stray(path, report)
            elif not path.name.startswith(shard.name):
                report.add("key-mismatch", path, f"filed under records/{shard.name}, so never "
                           f"read (a record's folder is its key's first two characters)")
            else:
                _verify_record(path, logged, report)


def _verify_record(path: Path, logged: dict[str, set[str]] | None,
                   report: VerifyReport) -> None:
    """A read's checks, then the log's: the record's digest must be one logged for its key."""
    try:
        rec, kind, why = read_record(path, path.stem)
    except FileNotFoundError:
        return  # deleted while we looked
    if rec is None:
        report.add(kind, path, why)
        return
    if logged is not None:
        digests = logged.get(path.stem)
        if digests is None:
            report.add("unlogged", path, f"not in {LOG_NAME} (copied in from another store, "
                       f"or its writer was killed between writing and logging it)")
            return
        if rec["digest"] not in digests:
            report.add("changed-since-written", path, f"digest differs from every one {LOG_NAME} "
                       f"logged for it (edited, and its digest rewritten)")
            return
    report.ok += 1
    if (rec["results_version"], rec["key_inputs"]["torch"]) != (RESULTS_VERSION,
                                                                 torch_version()):
        report.other_version += 1


def _verify_locks(locks: Path, report: VerifyReport) -> None:
    for path in sorted(locks.iterdir()):
        if path.name.startswith((".lock.", ".stale.")) and path.is_file():
            report.add("temp-file", path, "left by an interrupted lock or lock takeover")
        elif not (_LOCK_NAME.fullmatch(path.name) and path.is_file()):
            _stray(path, report)
        else:
            lock = _read_lock(path)
            if lock is not None and _judge_stale(lock):
                report.add("stale-lock", path, "lock of a process that is gone")


def _read_log(path: Path, report: VerifyReport) -> dict[str, set[str]] | None:
    """Every digest the log has per key (None without a log): any counts, not just the last,
    as two writers of one key may log in the other order than they renamed."""
    try:
        lines = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        return None
    except OSError as exc:
        report.add("bad-log", path, f"unreadable ({exc.strerror or exc})")
        return None
    logged: dict[str, set[str]] = {}
    if lines[-1] == b"":
        lines.pop()
    for n, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
            logged.setdefault(entry["key"], set()).add(entry["digest"])
        except (ValueError, KeyError, TypeError):
            report.add("bad-log", f"{path}:{n}", "line is not a log entry (JSON with key and "
                       "digest)")
    return logged
