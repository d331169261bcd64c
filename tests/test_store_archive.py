"""Store archives (grokverify.archive, `grokverify store pack|unpack`): a packed store unpacks
into a sound store holding the same record bytes, parts hold only what earlier parts lack, and
an archive that is not a store's records, or holds a damaged one, is refused by name."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from storedata import copy_tiny_store, edit_record, records_of

from grokverify.archive import ArchiveError, pack, unpack
from grokverify.cli import main
from grokverify.store import Store, verify


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["store", *argv])
    return code, capsys.readouterr().out


def _bytes(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in records_of(store)}


def test_a_packed_store_unpacks_into_a_sound_store_with_the_same_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = copy_tiny_store(tmp_path)
    code, out = _cli(capsys, "pack", str(tmp_path / "a.tar.xz"), "--store", str(store))
    assert code == 0 and "packed 6 record(s)" in out and "MB)" in out
    code, out = _cli(capsys, "unpack", str(tmp_path / "a.tar.xz"), "--store",
                     str(tmp_path / "new"))
    assert code == 0 and "unpacked 6 record(s)" in out and "(0 already there)" in out
    assert _bytes(tmp_path / "new") == _bytes(store)
    report = verify(Store(tmp_path / "new"))
    assert report.findings == [] and report.ok == 6  # every record logged as a run logs it
    _, out = _cli(capsys, "unpack", str(tmp_path / "a.tar.xz"), "--store", str(tmp_path / "new"))
    assert "unpacked 0 record(s)" in out and "(6 already there)" in out


def test_packing_the_same_records_gives_the_same_bytes(tmp_path: Path) -> None:
    store = Store(copy_tiny_store(tmp_path))
    pack(store, tmp_path / "a.tar.xz")
    for path in records_of(store.root):  # a later mtime must not change the archive
        path.touch()
    pack(store, tmp_path / "b.tar.xz")
    assert (tmp_path / "a.tar.xz").read_bytes() == (tmp_path / "b.tar.xz").read_bytes()
    with tarfile.open(tmp_path / "a.tar.xz") as tar:
        names = tar.getnames()
        assert {m.mtime for m in tar.getmembers()} == {0}
    assert names == sorted(names) and len(names) == 6


def test_a_later_part_holds_only_what_the_earlier_parts_lack(tmp_path: Path) -> None:
    store = Store(copy_tiny_store(tmp_path))
    first, *rest = records_of(store.root)
    moved = {p: p.read_bytes() for p in rest}
    for path in rest:
        path.unlink()
    assert pack(store, tmp_path / "part-1.tar.xz") == 1
    for path, data in moved.items():
        path.write_bytes(data)
    assert pack(store, tmp_path / "part-2.tar.xz", skip=[tmp_path / "part-1.tar.xz"]) == 5
    new = Store(tmp_path / "new")
    assert unpack([tmp_path / "part-1.tar.xz", tmp_path / "part-2.tar.xz"], new) == (6, 0)
    assert _bytes(new.root) == _bytes(store.root)


def test_packing_refuses_a_damaged_record(tmp_path: Path) -> None:
    store = copy_tiny_store(tmp_path)
    damaged = records_of(store)[2]
    edit_record(damaged, lambda rec: rec["result"]["summary"].update(val_step=12345))
    with pytest.raises(ArchiveError, match=f"{damaged.name}: content does not match its digest"):
        pack(Store(store), tmp_path / "a.tar.xz")
    assert not (tmp_path / "a.tar.xz").exists()


def _archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_unpacking_refuses_what_is_not_a_sound_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = copy_tiny_store(tmp_path)
    record = records_of(store)[0]
    name = f"records/{record.parent.name}/{record.name}"
    edited = json.loads(record.read_text())
    edited["result"]["summary"]["val_step"] = 12345
    cases = {
        "traversal": ({"../../evil.json": b"{}"}, "'../../evil.json' is not a record"),
        "log": ({"log.jsonl": b""}, "'log.jsonl' is not a record"),
        "misfiled": ({f"records/00/{record.name}": record.read_bytes()}, "is not a record"),
        "edited": ({name: json.dumps(edited, sort_keys=True).encode()},
                   f"record {record.stem}: content does not match its digest"),
    }
    for case, (members, phrase) in cases.items():
        archive = _archive(tmp_path / f"{case}.tar.xz", members)
        code, out = _cli(capsys, "unpack", str(archive), "--store", str(tmp_path / case))
        assert code == 2 and phrase in out and str(archive) in out, (case, out)
        assert not records_of(tmp_path / case), case
    assert not (tmp_path.parent / "evil.json").exists()
    (tmp_path / "not.tar.xz").write_bytes(b"not an archive")
    code, out = _cli(capsys, "unpack", str(tmp_path / "not.tar.xz"), "--store", str(store))
    assert code == 2 and "not a tar.xz archive of records" in out
    code, out = _cli(capsys, "unpack", str(tmp_path / "absent.tar.xz"), "--store", str(store))
    assert code == 2 and "absent.tar.xz: no such file" in out
    code, out = _cli(capsys, "pack", str(tmp_path / "x.tar.xz"), "--store", str(tmp_path / "no"))
    assert code == 2 and "no store at" in out
