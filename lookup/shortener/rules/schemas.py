"""Pydantic models documenting the redirect-rules endpoints in the OpenAPI schema.

The route validates bodies itself (:class:`~.parse.RuleParser`), so a refusal names its
rule and field; these models describe the shapes (Shlink's) for ``/docs`` and schemathesis.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lookup.shortener.rules.model import CONDITION_TYPES
from lookup.shortener.rules.parse import MAX_CONDITIONS, MAX_RULES

__all__ = [
    "RedirectCondition",
    "RedirectRule",
    "RedirectRuleView",
    "RedirectRules",
    "RulesBody",
    "inline_schema",
]

ConditionType = Literal[
    "device", "browser", "language", "country", "query-param", "valid-since", "valid-until"
]
assert set(ConditionType.__args__) == set(CONDITION_TYPES)  # type: ignore[attr-defined]


class RedirectCondition(BaseModel):
    """One condition; ``matchKey`` only for ``query-param``."""

    model_config = ConfigDict(extra="forbid")

    type: ConditionType
    matchKey: str | None = Field(None, max_length=128, examples=["utm_source"])
    matchValue: str = Field(max_length=256, examples=["android"])


class RedirectRule(BaseModel):
    """One rule: every condition must hold for its ``longUrl`` to be used."""

    model_config = ConfigDict(extra="forbid")

    longUrl: str = Field(max_length=2048, examples=["https://play.google.com/store/apps"])
    conditions: list[RedirectCondition] = Field(min_length=1, max_length=MAX_CONDITIONS)


class RulesBody(BaseModel):
    """``PUT /v1/links/{key}/redirect-rules``: the whole ordered list (``[]`` removes all)."""

    model_config = ConfigDict(extra="forbid")

    redirectRules: list[RedirectRule] = Field(max_length=MAX_RULES)


class RedirectRuleView(RedirectRule):
    """A stored rule; ``priority`` is its place in the list, from 1 (first match wins)."""

    priority: int


class RedirectRules(BaseModel):
    """A link's rules and the destination a visit no rule takes goes to."""

    key: str
    defaultLongUrl: str | None
    redirectRules: list[RedirectRuleView]


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with its ``$defs`` written in place (an OpenAPI request body
    cannot point into a ``$defs`` of its own)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return resolve(schema)  # type: ignore[no-any-return]
