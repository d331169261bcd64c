"""Statistics layer: the registry of criteria a claim can be judged by.

A claim names a criterion in ``CRITERIA``; its schema (`grokverify.catalog.criteria`: the
``params_model`` that validates the claim's parameters, ``arms_of``, ``kinds_of``,
``metrics_of``) comes from the catalog, and each statistics module adds the ``run`` that turns
the arms' data into a `CriterionResult`, under the same name.
"""

from __future__ import annotations

from grokverify.catalog.criteria import CRITERION_SPECS
from grokverify.registry import add_to
from grokverify.stats.base import (
    ArmSample,
    ArmSummary,
    Criterion,
    CriterionResult,
    Verdict,
)
from grokverify.stats.correlation import CORRELATION
from grokverify.stats.cox import COX_HAZARD_RATIO
from grokverify.stats.crossing import CROSSING
from grokverify.stats.equivalence import EQUIVALENCE
from grokverify.stats.phase_order import PHASE_ORDER
from grokverify.stats.proportion import PROPORTION
from grokverify.stats.scalar import SCALAR_COMPARE, VALUE_CRITERION
from grokverify.stats.survival import SURVIVAL_COMPARE

CRITERIA: dict[str, Criterion] = {}


def register(c: Criterion) -> None:
    """Add a criterion; a second one under the same name is an error, not a silent override."""
    add_to(CRITERIA, "criterion", c.name, c)


def criterion_for(name: str, params: object) -> Criterion:
    """The registered criterion `name`, checking that `params` are its own params model."""
    if name not in CRITERIA:
        raise KeyError(f"unknown criterion {name!r}")
    criterion = CRITERIA[name]
    if not isinstance(params, criterion.params_model):
        raise TypeError(f"expected {criterion.params_model.__name__}, got "
                        f"{type(params).__name__}")
    return criterion


for _criterion in (SURVIVAL_COMPARE, COX_HAZARD_RATIO, SCALAR_COMPARE, EQUIVALENCE, PROPORTION,
                   CORRELATION, VALUE_CRITERION, CROSSING, PHASE_ORDER):
    register(_criterion)
if set(CRITERIA) != set(CRITERION_SPECS):  # a schema without statistics, or the reverse
    raise ImportError(f"criteria with a schema but no run, or a run but no schema: "
                      f"{sorted(set(CRITERIA) ^ set(CRITERION_SPECS))}")

__all__ = [
    "CRITERIA",
    "criterion_for",
    "ArmSample",
    "ArmSummary",
    "Criterion",
    "CriterionResult",
    "Verdict",
    "register",
]
