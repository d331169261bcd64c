"""Files written whole or not at all: a temporary file in the same directory, renamed into place;
blocks that Ctrl-C or SIGTERM cannot cut in two."""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import (os.umask can only be read by setting it): new files get the permissions
# an ordinary open() would give them (mkstemp's own 0600 would hide shared stores and reports
# from the other users of a cluster).
_FILE_MODE = 0o666 & ~_umask()


def write_atomic(path: Path, text: str | bytes, *, fsync: bool = False) -> None:
    """Write `text` (or bytes) to `path` atomically; on any error nothing is left behind
    (OSError raised)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as fh:
            os.fchmod(fh.fileno(), _FILE_MODE)
            fh.write(text)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def probe_writable(folder: Path) -> None:
    """Create `folder` if needed and write and remove a file in it, as a run will later: a
    folder that cannot take files fails here, before any training (OSError raised)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe.")
    os.close(fd)
    os.unlink(probe)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block ends, then deliver them to the handlers they
    would have reached: a record written is logged and its lock released, or neither happens.
    Off the main thread (where handlers cannot be set) it holds nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    before = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)
