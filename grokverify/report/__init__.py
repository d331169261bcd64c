"""Report writers: result.json (everything, machine-readable), report.md, figures."""

from grokverify.report.write import write_report

__all__ = ["write_report"]
