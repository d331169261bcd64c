"""A store's records as tar.xz archives that a fresh clone unpacks into a store of its own: how
the reference store travels with the repository (docs/store.md, "Archives")."""

from __future__ import annotations

import io
import json
import lzma
import re
import tarfile
from collections.abc import Iterable
from pathlib import Path

from grokverify.atomic import write_atomic
from grokverify.store import Store, StoreError, judge_record, read_record

_MEMBER = re.compile(r"records/([0-9a-f]{2})/(\1[0-9a-f]{62})\.json")


class ArchiveError(StoreError):
    """An archive that is not one `pack` wrote, or holds a record that does not read sound."""


def _members(archive: Path) -> Iterable[tuple[str, str]]:
    """(key, text) of every record in `archive`; anything else in it is refused."""
    try:
        with tarfile.open(archive, "r:xz") as tar:
            for member in tar:
                found = _MEMBER.fullmatch(member.name)
                if found is None or not member.isfile():
                    raise ArchiveError(f"{archive}: {member.name!r} is not a record "
                                       f"(expected records/<2 hex>/<64 hex>.json files only)")
                data = tar.extractfile(member)
                assert data is not None  # a regular file's member always has data
                yield found.group(2), data.read().decode()
    except (tarfile.TarError, lzma.LZMAError, EOFError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"{archive}: not a tar.xz archive of records ({exc})") from None
    except FileNotFoundError:
        raise ArchiveError(f"{archive}: no such file") from None


def archived_keys(archives: Iterable[Path]) -> set[str]:
    return {key for archive in archives for key, _ in _members(archive)}


def pack(store: Store, out: Path, skip: Iterable[Path] = ()) -> int:
    """Write every sound record of `store` that none of the archives `skip` holds to `out`, in
    key order with no owner or time, so the same records always give the same bytes. A damaged
    record stops the packing (ArchiveError); returns the number packed."""
    skipped = archived_keys(skip)
    buffer = io.BytesIO()
    packed = 0
    with tarfile.open(fileobj=buffer, mode="w:xz", preset=9) as tar:
        for path in sorted((store.root / "records").glob("*/*.json")):
            if not _MEMBER.fullmatch(f"records/{path.parent.name}/{path.name}") \
                    or path.stem in skipped:
                continue
            rec, _, why = read_record(path, path.stem)
            if rec is None:
                raise ArchiveError(f"{path}: {why}; `grokverify store verify` lists what is "
                                   f"damaged")
            data = json.dumps(rec, sort_keys=True).encode()  # its bytes: judge_record checks
            info = tarfile.TarInfo(f"records/{path.parent.name}/{path.name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
            packed += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, buffer.getvalue(), fsync=True)
    return packed


def unpack(archives: Iterable[Path], store: Store) -> tuple[int, int]:
    """Put every record of the archives into `store`, each checked as a read checks it and
    logged as a run logs it; a record the store already holds sound is left. Returns (added,
    already there)."""
    added = kept = 0
    for archive in archives:
        for key, text in _members(archive):
            rec, _, why = judge_record(text, key)
            if rec is None:
                raise ArchiveError(f"{archive}: record {key}: {why}")
            if store.has(key):
                kept += 1
                continue
            store.put(key, rec, fsync=False)  # a copy a power loss cuts short is unpacked again
            added += 1
    return added, kept
