"""Redirect rules from the API's JSON, each refusal naming the rule and the field.

The body is Shlink's: ``{"redirectRules": [{"longUrl": …, "conditions": [{"type": …,
"matchKey": …, "matchValue": …}]}]}``. A rule's destination passes every check a link's
own destination passes — the URL policy (:class:`~lookup.shortener.urls.UrlPolicy`:
shape, private and reserved addresses in every spelling, this shortener itself, the
domain blocklist) and the safety scanner's verdict on the URL
(:func:`~lookup.shortener.scanner.assess`: blocklist and threat feed; MALICIOUS is
refused) — so a rule cannot lead where the link itself may not. A refusal is a 400 whose
body carries ``rule`` (its index from 0) and ``field`` (``longUrl``,
``conditions[1].matchValue``, …) beside the code.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from lookup import errors
from lookup.shortener.model import InvalidTime, parse_time
from lookup.shortener.rules.model import CONDITION_TYPES, DEVICES, Condition, Rule
from lookup.shortener.urls import UrlRejected

__all__ = ["MAX_CONDITIONS", "MAX_RULES", "RuleParser"]

#: At most this many rules per link, and conditions per rule (Shlink sets no limit; a
#: bound keeps every redirect's work small).
MAX_RULES = 20
MAX_CONDITIONS = 10
_LANGUAGE = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{2,8})?")
_COUNTRY = re.compile(r"[A-Z]{2}")
_BROWSER = re.compile(r"[a-z0-9][a-z0-9 ._/-]{0,63}")
_RULE_FIELDS = frozenset({"longUrl", "conditions"})
_CONDITION_FIELDS = frozenset({"type", "matchKey", "matchValue"})


def _bad(index: int | None, field: str, message: str, code: str = "INVALID_RULE") -> Exception:
    where = "redirectRules" if index is None else f"redirectRules[{index}]"
    where = f"{where}.{field}" if field else where
    extra: dict[str, Any] = {"field": field}
    if index is not None:
        extra["rule"] = index
    return errors.InvalidInput(f"{where}: {message}", code=code, extra=extra)


class RuleParser:
    """Validates rules with the checks of link destinations.

    ``check_url`` is the URL policy's check (raises ``UrlRejected``); ``assess`` gives the
    scanner's verdict on a URL (``(verdict, reasons)``), None to skip it.
    """

    def __init__(
        self,
        check_url: Callable[[object], str],
        assess: Callable[[str], tuple[str, tuple[str, ...]]] | None = None,
    ) -> None:
        self.check_url = check_url
        self.assess = assess

    def body(self, body: object) -> tuple[Rule, ...]:
        """The rules of a ``PUT …/redirect-rules`` body."""
        if not isinstance(body, dict):
            raise _bad(None, "", "the body must be a JSON object", "MALFORMED_JSON")
        unknown = sorted(set(body) - {"redirectRules"})
        if unknown:
            raise errors.InvalidInput(
                f"unknown field(s): {unknown}; accepted: ['redirectRules']", code="UNKNOWN_FIELD"
            )
        if "redirectRules" not in body:
            raise _bad(None, "", "redirectRules is required (an empty list removes every rule)")
        return self.rules(body["redirectRules"])

    def rules(self, value: object) -> tuple[Rule, ...]:
        """A list of rule objects, checked in order."""
        if not isinstance(value, list):
            raise _bad(None, "", "must be a list of rules")
        if len(value) > MAX_RULES:
            raise _bad(None, "", f"at most {MAX_RULES} rules per link", "TOO_MANY_RULES")
        return tuple(self.rule(i, item) for i, item in enumerate(value))

    def rule(self, index: int, item: object) -> Rule:
        """One rule: its destination, then each condition."""
        if not isinstance(item, dict):
            raise _bad(index, "", "a rule is an object with longUrl and conditions")
        unknown = sorted(set(item) - _RULE_FIELDS)
        if unknown:
            raise _bad(index, unknown[0], f"unknown field; accepted: {sorted(_RULE_FIELDS)}")
        if "longUrl" not in item:
            raise _bad(index, "longUrl", "is required", "INVALID_URL")
        try:
            url = self.check_url(item["longUrl"])
        except UrlRejected as exc:
            raise _bad(index, "longUrl", exc.message, exc.code) from None
        if self.assess is not None:
            verdict, reasons = self.assess(url)
            if verdict == "MALICIOUS":
                why = "; ".join(reasons) or "the safety scanner refuses it"
                raise _bad(index, "longUrl", why, "UNSAFE_URL")
        conditions = item.get("conditions")
        if not isinstance(conditions, list) or not conditions:
            raise _bad(index, "conditions", "must be a non-empty list of conditions")
        if len(conditions) > MAX_CONDITIONS:
            raise _bad(index, "conditions", f"at most {MAX_CONDITIONS} conditions per rule")
        parsed = tuple(self.condition(index, i, c) for i, c in enumerate(conditions))
        return Rule(url, parsed)

    @staticmethod
    def condition(index: int, position: int, item: object) -> Condition:
        """One condition, its value normalised (see :class:`~.model.Condition`)."""
        at = f"conditions[{position}]"
        if not isinstance(item, dict):
            raise _bad(index, at, "a condition is an object with type and matchValue")
        unknown = sorted(set(item) - _CONDITION_FIELDS)
        if unknown:
            raise _bad(index, f"{at}.{unknown[0]}", "unknown field")
        kind = item.get("type")
        if kind not in CONDITION_TYPES:
            raise _bad(index, f"{at}.type", f"must be one of {list(CONDITION_TYPES)}")
        key = item.get("matchKey")
        raw = item.get("matchValue")
        field = f"{at}.matchValue"
        if kind == "query-param":
            if not isinstance(key, str) or not 0 < len(key) <= 128:
                raise _bad(index, f"{at}.matchKey", "a query parameter name (1-128 characters)")
        elif key is not None:
            raise _bad(index, f"{at}.matchKey", f"a {kind} condition takes no matchKey")
        if kind in ("valid-since", "valid-until"):
            if not isinstance(raw, str):
                raise _bad(index, field, "an ISO 8601 time such as 2026-12-31T18:00:00Z")
            try:
                ts = parse_time(raw)
            except InvalidTime as exc:
                raise _bad(index, field, str(exc)) from None
            if not math.isfinite(ts):
                raise _bad(index, field, "not a time")
            return Condition(kind, repr(ts))
        if not isinstance(raw, str) or not 0 < len(raw) <= 256:
            raise _bad(index, field, "a non-empty string of at most 256 characters")
        if kind == "device":
            value = raw.strip().lower()
            if value not in DEVICES:
                raise _bad(index, field, f"must be one of {list(DEVICES)}")
        elif kind == "browser":
            value = " ".join(raw.lower().split())
            if not _BROWSER.fullmatch(value):
                raise _bad(index, field, "a browser family such as chrome, firefox or safari")
        elif kind == "language":
            value = raw.strip().lower().replace("_", "-")
            if not _LANGUAGE.fullmatch(value):
                raise _bad(index, field, "a language such as es or es-AR")
        elif kind == "country":
            value = raw.strip().upper()
            if not _COUNTRY.fullmatch(value):
                raise _bad(index, field, "an ISO 3166-1 alpha-2 country code such as IN")
        else:  # query-param: the value as the visitor's query string decodes it
            value = raw
        return Condition(kind, value, key if kind == "query-param" else None)
