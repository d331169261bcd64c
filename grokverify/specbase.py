"""The base of every spec model: unknown keys are errors, never silently ignored."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def canonical(self) -> str:
        """Stable JSON of every field (defaults included): the basis of content hashes."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
