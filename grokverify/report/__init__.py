"""Report writers: result.json (everything, machine-readable), report.md, figures, suites."""
