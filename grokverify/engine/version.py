"""The engine's results version, part of every store key: bump it with any change to what
training produces (a different rounding counts) and regenerate the golden records in the same
commit (`python tests/golden/make_golden.py`; tests/test_engine_golden.py checks). See
docs/store.md."""

RESULTS_VERSION = "2026-12-02.1"
