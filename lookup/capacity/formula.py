"""The notation a figure's formula is written in, read two ways: worked out and shown.

A formula is the text a person reads, with slots where the numbers go::

    "{a.links_per_month} / {seconds_per_month} s"

``{a.name}`` is an assumption, ``{name}`` another quantity of the same plan and
``{NAME}`` a constant (:data:`CONSTANTS`).

*Worked out*, every slot takes its exact value and the text is arithmetic:
``+ − × / ^ ²``, parentheses, ``ln x`` and the functions of :data:`FUNCTIONS`
(``ceil(x)``, ``max(x, y)`` and the helper rules). Words (units and nouns such as
``s``, ``links``, ``per leaf``) are ignored, and ``[...]`` is prose: shown, never
worked out.

*Shown*, each slot is written in its style: ``{x}`` a compact number (``100M``,
``2,592,000``), ``{x:raw}`` as it is (``62``), ``{x:q}`` a quantity in the unit of the
figure it names (``38.6/s``) and ``{x:B}`` — any other unit — a quantity in that unit
(``500 B``, ``0.34%`` for ``{x:fraction}``). Because the value and the text are read
from the same characters, they cannot drift apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lookup.capacity import helpers
from lookup.capacity.units import format_quantity, number

#: Named numbers a formula may use as ``{NAME}``.
CONSTANTS: dict[str, int] = {
    "SECONDS_PER_DAY": helpers.SECONDS_PER_DAY,
    "SECONDS_PER_HOUR": helpers.SECONDS_PER_HOUR,
    "DAYS_PER_YEAR": helpers.DAYS_PER_YEAR,
    "MONTHS_PER_YEAR": helpers.MONTHS_PER_YEAR,
    "BASE62": helpers.BASE62,
}


def ceil(x: float) -> int:
    """Round up to a whole number ignoring float noise (4.0000000001 is 4, not 5).

    A positive amount never rounds to 0: one machine is the least a fleet has.
    """
    whole = math.ceil(x - 1e-9 * max(1.0, abs(x)))
    return max(1, whole) if x > 0 else whole


#: The functions a formula may call, by the name it calls them.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ln": math.log,
    "ceil": ceil,
    "max": max,
    "key_length_for": helpers.key_length_for,
    "bloom_optimal_hashes": helpers.bloom_optimal_hashes,
    "fanout_tail_probability": helpers.fanout_tail_probability,
}

_NAME = re.compile(r"(a\.)?[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN = re.compile(
    r"\s+|(?P<num>\d+(?:\.\d+)?)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[-+−×*/^²(),])"
)
_OPS = {"-": "−", "*": "×"}


@dataclass(frozen=True)
class Slot:
    """Where a number goes: the name of the value and the style it is shown in."""

    name: str
    style: str = "n"

    def show(self, value: Callable[[str], Any], unit: Callable[[str], str]) -> str:
        """The slot's value written in its style."""
        v = value(self.name)
        if self.style == "n":
            return number(v)
        if self.style == "raw":
            return str(v)
        if self.style == "q":
            return format_quantity(v, unit(self.name))
        return format_quantity(v, self.style)


@dataclass(frozen=True)
class Prose:
    """Text shown beside the arithmetic but not part of it (``[→ too many]``)."""

    parts: tuple[str | Slot, ...]


Part = str | Slot | Prose


def _slot(inside: str, text: str) -> Slot:
    name, _, style = inside.partition(":")
    name = name.strip()
    if not _NAME.match(name):
        raise ValueError(f"bad slot {{{inside}}} in {text!r}")
    return Slot(name, style.strip() or "n")


def split(text: str) -> tuple[Part, ...]:
    """Cut ``text`` into literal text, slots and prose."""
    parts: list[Part] = []
    prose: list[str | Slot] | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        target: list[Any] = parts if prose is None else prose
        if ch == "{":
            end = text.find("}", i)
            if end < 0:
                raise ValueError(f"unclosed slot in {text!r}")
            target.append(_slot(text[i + 1 : end], text))
            i = end + 1
            continue
        if ch == "[" and prose is None:
            prose = []
        elif ch == "]" and prose is not None:
            parts.append(Prose(tuple(prose)))
            prose = None
        elif ch in "[]}":
            raise ValueError(f"unbalanced {ch!r} in {text!r}")
        elif target and isinstance(target[-1], str):
            target[-1] += ch
        else:
            target.append(ch)
        i += 1
    if prose is not None:
        raise ValueError(f"unclosed [ in {text!r}")
    return tuple(parts)


class Template:
    """Text with slots, shown with the values filled in (labels, driver sentences)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.parts = split(text)

    def slots(self) -> list[Slot]:
        """Every slot, in the prose too."""
        found: list[Slot] = []
        for part in self.parts:
            inner = part.parts if isinstance(part, Prose) else (part,)
            found += [p for p in inner if isinstance(p, Slot)]
        return found

    def render(self, value: Callable[[str], Any], unit: Callable[[str], str]) -> str:
        """The text with every slot written in its style and the prose brackets dropped."""
        out: list[str] = []
        for part in self.parts:
            for piece in part.parts if isinstance(part, Prose) else (part,):
                out.append(piece.show(value, unit) if isinstance(piece, Slot) else piece)
        return "".join(out)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text!r})"


class Formula(Template):
    """A template whose text outside the prose is arithmetic that can be worked out."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        tokens = _tokens(self.parts, text)
        self.tree = _Parser(tokens, text).parse() if tokens else None

    @property
    def is_arithmetic(self) -> bool:
        """Whether there is anything to work out (prose alone states a rule, not a sum)."""
        return self.tree is not None

    def evaluate(self, value: Callable[[str], Any]) -> Any:
        """The formula worked out with each slot's exact value.

        Raises ``ValueError`` when it cannot be (a division by zero, an overflow).
        """
        if self.tree is None:
            raise ValueError(f"{self.text!r} is prose, there is nothing to work out")
        try:
            return _evaluate(self.tree, value)
        except (ZeroDivisionError, OverflowError) as exc:
            raise ValueError(f"{self.text!r} cannot be worked out: {exc}") from None


def calculate(text: str) -> Any:
    """Work out plain arithmetic written the way formulas show it: ``'−ln 0.01 / (ln 2)²'``."""
    return Formula(text).evaluate(lambda name: CONSTANTS[name])


# ------------------------------------------------------------------- parsing

Token = tuple[str, Any]


def _tokens(parts: tuple[Part, ...], text: str) -> list[Token]:
    tokens: list[Token] = []
    for part in parts:
        if isinstance(part, Slot):
            tokens.append(("name", part.name))
        elif isinstance(part, str):
            pos = 0
            while pos < len(part):
                m = _TOKEN.match(part, pos)
                if m is None:
                    raise ValueError(
                        f"{part[pos]!r} is not arithmetic in {text!r}; put prose in [...]"
                    )
                pos = m.end()
                if m["num"]:
                    num = m["num"]
                    tokens.append(("num", float(num) if "." in num else int(num)))
                elif m["word"] and m["word"] in FUNCTIONS:
                    tokens.append(("func", m["word"]))
                elif m["op"]:
                    tokens.append(("op", _OPS.get(m["op"], m["op"])))
    return tokens


class _Parser:
    """Precedence as in Python: ``−2^2`` is ``−(2^2)``, ``a / b × c`` is ``(a / b) × c``."""

    def __init__(self, tokens: list[Token], text: str) -> None:
        self.tokens = tokens
        self.text = text
        self.at = 0

    def parse(self) -> tuple:
        tree = self._sum()
        if self.at != len(self.tokens):
            self._fail(f"unexpected {self.tokens[self.at][1]!r}")
        return tree

    def _fail(self, why: str) -> None:
        raise ValueError(f"{why} in formula {self.text!r}")

    def _peek(self) -> Token | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self, op: str | None = None) -> Token:
        token = self._peek()
        if token is None or (op is not None and token != ("op", op)):
            self._fail(f"expected {op or 'more'}")
        self.at += 1
        return token  # type: ignore[return-value]

    def _binary(self, ops: str, operand: Callable[[], tuple]) -> tuple:
        tree = operand()
        while (token := self._peek()) is not None and token[0] == "op" and token[1] in ops:
            self.at += 1
            tree = (token[1], tree, operand())
        return tree

    def _sum(self) -> tuple:
        return self._binary("+−", self._product)

    def _product(self) -> tuple:
        return self._binary("×/", self._unary)

    def _unary(self) -> tuple:
        if self._peek() == ("op", "−"):
            self.at += 1
            return ("neg", self._unary())
        return self._power()

    def _power(self) -> tuple:
        base = self._atom()
        while self._peek() == ("op", "²"):
            self.at += 1
            base = ("^", base, ("num", 2))
        if self._peek() == ("op", "^"):
            self.at += 1
            return ("^", base, self._unary())
        return base

    def _atom(self) -> tuple:
        kind, value = self._take()
        if kind in ("num", "name"):
            return (kind, value)
        if kind == "func":
            if self._peek() != ("op", "("):
                return ("call", value, (self._atom(),))  # ln 2
            self.at += 1
            args = [self._sum()]
            while self._peek() == ("op", ","):
                self.at += 1
                args.append(self._sum())
            self._take(")")
            return ("call", value, tuple(args))
        if (kind, value) == ("op", "("):
            tree = self._sum()
            self._take(")")
            return tree
        self._fail(f"unexpected {value!r}")
        raise AssertionError  # unreachable: _fail raises


def _evaluate(tree: tuple, value: Callable[[str], Any]) -> Any:
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "name":
        return value(tree[1])
    if kind == "neg":
        return -_evaluate(tree[1], value)
    if kind == "call":
        return FUNCTIONS[tree[1]](*(_evaluate(arg, value) for arg in tree[2]))
    left, right = _evaluate(tree[1], value), _evaluate(tree[2], value)
    if kind == "+":
        return left + right
    if kind == "−":
        return left - right
    if kind == "×":
        return left * right
    if kind == "/":
        return left / right
    return left**right
