"""Registries of names and spec classes of every kind a claim can name; importable without torch,
numpy, scipy or statsmodels."""
