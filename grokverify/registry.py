"""Registries: a dict from a kind's name to its implementation, filled by registration that
refuses a second, different entry under a taken name (a silent override would change what a
claim that names it runs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def add_to(registry: dict[str, T], what: str, name: str, item: T) -> T:
    """Register `item` under `name` (again the same item: nothing changes)."""
    if registry.get(name, item) is not item:
        raise ValueError(f"{what} {name!r} is already registered")
    registry[name] = item
    return item


def registrar(registry: dict[str, T], what: str) -> Callable[[str], Callable[[T], T]]:
    """A decorator factory: `@reg("name")` registers the decorated function or class."""
    def under(name: str) -> Callable[[T], T]:
        return lambda item: add_to(registry, what, name, item)
    return under
