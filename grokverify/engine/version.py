"""The engine's results version: part of every store key (docs/store.md).

Bump it in any change that alters what training produces for some experiment and seed (a
different rounding counts), and regenerate the golden records in the same commit
(`python tests/golden/make_golden.py`); `tests/test_golden.py` fails when results change without
a bump, and when the version changes without new golden records. Refactors, comments and speed
work that keep results bit-identical do not bump it, so they do not re-key the store.
"""

RESULTS_VERSION = "2026-12-02.1"
