"""The base of every spec model: unknown keys are errors, never silently ignored."""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Strict

# An integer written as one: YAML's true/false or 3.0 are refused, not read as 1 or 3.
Int = Annotated[int, Strict()]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def canonical(self) -> str:
        """Stable JSON of every field (defaults included): the basis of content hashes."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
