"""What every config section shares: frozen, and no key it does not know."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigError(Exception):
    """The configuration is unusable: one line per problem, each naming the key."""

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
