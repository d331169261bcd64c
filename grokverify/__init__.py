"""grokverify: re-run grokking claims over many seeds and give a verdict with a CI."""

__version__ = "0.1.0"
