"""Pinned CPU numerics: the same kernels, hence the same bits, on any x86-64 CPU with AVX2.

ATen's vectorised kernels are pinned to AVX2 and MKL to its COMPATIBLE branch, the one branch
MKL runs identically on Intel and AMD (docs/determinism.md says why and what it costs).
`pin_environment` must run before a process's first torch computation; `pin` checks it took.
"""

from __future__ import annotations

import ctypes
import os
from functools import cache
from pathlib import Path

PINNED = "x86-avx2-mkl-compatible"  # the numerics tag of a pinned CPU process (in CPU keys)
_ATEN = "ATEN_CPU_CAPABILITY"
_MKL = "MKL_CBWR"
_MODE = "GROKVERIFY_NUMERICS"
# mkl_service.h
_MKL_CBWR_BRANCH = 1
_MKL_CBWR_COMPATIBLE = 3
_MKL_BRANCH_NAMES = {1: "off", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_1",
                     8: "SSE4_2", 9: "AVX", 10: "AVX2", 11: "AVX512_MIC", 12: "AVX512",
                     13: "AVX512_MIC_E1", 14: "AVX512_E1"}


class NumericsError(RuntimeError):
    """The process's kernels cannot be pinned; training would not be reproducible elsewhere."""


def native() -> bool:
    """Whether the user turned pinning off (``GROKVERIFY_NUMERICS=native``)."""
    return os.environ.get(_MODE, "").strip().lower() == "native"


def pin_environment() -> None:
    """Ask ATen and MKL for the pinned kernels (overriding inherited values); takes effect only
    before the process's first torch computation."""
    if not native():
        os.environ[_ATEN] = "avx2"
        os.environ[_MKL] = "COMPATIBLE"


@cache
def _mkl() -> ctypes.CDLL | None:
    """torch's own copy of MKL's service functions, or None (a torch built without MKL)."""
    import torch

    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        dll = ctypes.CDLL(str(lib))
        dll.mkl_serv_cbwr_set.argtypes = [ctypes.c_int]
        dll.mkl_serv_cbwr_set.restype = ctypes.c_int
        dll.mkl_serv_cbwr_get.argtypes = [ctypes.c_int]
        dll.mkl_serv_cbwr_get.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return dll


def mkl_branch() -> str:
    """MKL's current code branch ("COMPATIBLE" when pinned; "none" without MKL)."""
    dll = _mkl()
    if dll is None:
        return "none"
    code = dll.mkl_serv_cbwr_get(_MKL_CBWR_BRANCH)
    return _MKL_BRANCH_NAMES.get(code, str(code))


def aten_capability() -> str:
    import torch

    return torch.backends.cpu.get_cpu_capability()


def pin() -> None:
    """Pin the kernels, or raise NumericsError when torch already computed with others.
    Idempotent; a no-op with ``GROKVERIFY_NUMERICS=native``."""
    if native():
        return
    pin_environment()
    dll = _mkl()
    if dll is not None and mkl_branch() != "COMPATIBLE":
        dll.mkl_serv_cbwr_set(_MKL_CBWR_COMPATIBLE)
    got_aten, got_mkl = aten_capability(), mkl_branch()
    if got_aten != "AVX2" or got_mkl not in ("COMPATIBLE", "none"):
        raise NumericsError(
            f"cannot pin the CPU kernels (ATen: {got_aten}, MKL: {got_mkl}; wanted AVX2 and "
            f"COMPATIBLE): torch computed something in this process before the kernels were "
            f"pinned, or this CPU lacks AVX2. Call grokverify.engine.numerics.pin_environment() "
            f"before any torch computation, or set {_MODE}=native to train with this host's own "
            f"kernels (results then match only machines with the same kernel set).")


def tag(device_type: str) -> str:
    """The numerics part of a store key: the pinned tag on CPUs, the device type elsewhere,
    the host's actual kernel set when pinning is off."""
    if device_type != "cpu":
        return device_type
    if not native():
        return PINNED
    return f"native-{aten_capability().lower()}-mkl-{mkl_branch().lower()}"


def describe() -> dict[str, str]:
    """What a record says about the kernels that produced it."""
    return {"mode": "native" if native() else "pinned", "aten": aten_capability(),
            "mkl_branch": mkl_branch()}
