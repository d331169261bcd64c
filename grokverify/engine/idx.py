"""The IDX file format of MNIST and its kin (yann.lecun.com/exdb/mnist): a 4-byte magic number
(two zero bytes, a type code, the number of dimensions), each dimension as a big-endian int32,
then the values, big-endian, row-major. Read plain or gzip-compressed; written by tests and by
`runners/` scripts that convert a copy of the data they have."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

# type code -> numpy dtype (big-endian, as the format stores it)
IDX_TYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8"),
}
_GZIP_MAGIC = b"\x1f\x8b"


class IdxError(ValueError):
    """A file that is not a well-formed IDX file; the message names the file and the fault."""


def _raw(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == _GZIP_MAGIC:
        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise IdxError(f"{path}: a damaged gzip file ({exc})") from None
    return data


def read_idx(path: Path) -> np.ndarray:
    """The array an IDX file holds, in native byte order."""
    data = _raw(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in IDX_TYPES:
        raise IdxError(f"{path}: not an IDX file (its first bytes are {data[:4].hex()}; an IDX "
                       f"file starts 0000, a type code and the number of dimensions)")
    dtype, ndim = IDX_TYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise IdxError(f"{path}: truncated header ({len(data)} bytes, {header} needed)")
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    count = int(np.prod(shape, dtype=np.int64))
    if len(data) != header + count * dtype.itemsize:
        raise IdxError(f"{path}: its header promises {shape} values of {dtype.itemsize} bytes "
                       f"({header + count * dtype.itemsize} bytes in all), the file has "
                       f"{len(data)}")
    values = np.frombuffer(data, dtype=dtype, count=count, offset=header).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


def write_idx(path: Path, values: np.ndarray, compress: bool = False) -> None:
    """Write `values` (an integer or float array of a type IDX has) as an IDX file."""
    code = next((c for c, t in IDX_TYPES.items() if t.kind == values.dtype.kind
                 and t.itemsize == values.dtype.itemsize), None)
    if code is None:
        raise IdxError(f"IDX has no type for {values.dtype}")
    body = (bytes([0, 0, code, values.ndim])
            + np.asarray(values.shape, dtype=">u4").tobytes()
            + np.ascontiguousarray(values).astype(IDX_TYPES[code]).tobytes())
    path.write_bytes(gzip.compress(body, mtime=0) if compress else body)
