"""The user's copy of an image dataset (`grokverify.claim.tasks.IMAGE_DATASETS`): its standard
IDX files, found in the folder `--data-dir` or GROKVERIFY_DATA_DIR names (or its sub-folder named
after the dataset), checked, and identified by a digest of what was read, which keys every record
made from them (docs/store.md). Nothing is downloaded or made up: without the files a claim that
needs them is skipped with this module's message (`MissingData`)."""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grokverify.claim.tasks import IMAGE_DATASETS, ImageDataset
from grokverify.engine.idx import IdxError, read_idx

ENV_VAR = "GROKVERIFY_DATA_DIR"


class MissingData(LookupError):
    """The dataset's files are not where the run looks (the message says where it looked and
    how to name the folder)."""


class BadData(ValueError):
    """The files are there but are not the dataset (wrong shapes, labels, counts)."""


@dataclass(frozen=True)
class ImageData:
    """A dataset as read: each part's images (rows, features) as uint8 and labels (rows,)."""

    name: str
    folder: Path
    parts: dict[str, tuple[np.ndarray, np.ndarray]]
    digest: str

    def rows(self, part: str) -> int:
        return int(self.parts[part][1].shape[0])


def data_dir() -> Path | None:
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser() if value else None


def _file(folder: Path, name: str) -> Path | None:
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def locate(name: str) -> dict[str, tuple[Path, Path]]:
    """Each part's (images, labels) files, from the data folder or its sub-folder `name`."""
    info = IMAGE_DATASETS[name]
    files = [f for pair in info.files.values() for f in pair]
    root = data_dir()
    if root is None:
        raise MissingData(
            f"needs the {name} dataset's IDX files ({', '.join(files)}), and no data folder was "
            f"named: pass --data-dir DIR or set {ENV_VAR}=DIR (the files, plain or .gz, in DIR "
            f"or DIR/{name}; from {info.where})")
    for folder in (root / name, root):
        found = {part: (_file(folder, images), _file(folder, labels))
                 for part, (images, labels) in info.files.items()}
        if all(p is not None for pair in found.values() for p in pair):
            return found  # type: ignore[return-value]
    missing = [f for f in files if _file(root / name, f) is None and _file(root, f) is None]
    raise MissingData(
        f"needs the {name} dataset's IDX files; {', '.join(missing)} not found in {root} or "
        f"{root / name} (the folder {'named by ' + ENV_VAR if root else ''} or --data-dir; from "
        f"{info.where})")


def _checked(name: str, info: ImageDataset, part: str, images: Path,
             labels: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        x, y = read_idx(images), read_idx(labels)
    except IdxError as exc:
        raise BadData(f"{name}: {exc}") from None
    except OSError as exc:
        raise BadData(f"{name}: cannot read {exc.filename}: {exc.strerror}") from None
    if x.dtype != np.uint8 or y.dtype != np.uint8:
        raise BadData(f"{name}: {part} images and labels must be unsigned bytes, got "
                      f"{x.dtype} in {images.name} and {y.dtype} in {labels.name}")
    if x.ndim < 2 or int(np.prod(x.shape[1:])) != info.features:
        raise BadData(f"{name}: {images} holds images of shape {x.shape[1:]}; {name}'s have "
                      f"{info.features} pixels")
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise BadData(f"{name}: {labels} has {y.shape} labels for {x.shape[0]} images in "
                      f"{images.name}")
    if x.shape[0] == 0:
        raise BadData(f"{name}: {images} holds no images")
    if int(y.max()) >= info.classes:
        raise BadData(f"{name}: {labels} has label {int(y.max())}; {name} has {info.classes} "
                      f"classes (0..{info.classes - 1})")
    return x.reshape(x.shape[0], info.features), y


_LOADED: dict[tuple[str, tuple[tuple[str, int, int], ...]], ImageData] = {}
_LOCK = threading.Lock()  # a trainer's shards load in threads side by side


def load(name: str) -> ImageData:
    """The dataset as the data folder holds it now (read once per process while its files are
    unchanged)."""
    found = locate(name)
    paths = [p for pair in found.values() for p in pair]
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths)
    with _LOCK:
        data = _LOADED.get((name, stamp))
        if data is None:
            info = IMAGE_DATASETS[name]
            parts = {part: _checked(name, info, part, *found[part]) for part in info.files}
            h = hashlib.sha256(name.encode())
            for part in info.files:
                x, y = parts[part]
                h.update(f"|{part}|{x.shape[0]}|".encode())
                h.update(x.tobytes())
                h.update(y.tobytes())
            data = ImageData(name, found["train"][0].parent, parts,
                             "sha256:" + h.hexdigest()[:32])
            _LOADED.clear()  # one copy in memory at a time
            _LOADED[(name, stamp)] = data
    return data
