"""The part of CEL that DRA device selectors use, parsed and evaluated against one device. Pure.

Role: `DeviceClass.spec.selectors[].cel.expression` and a ResourceClaim request's selectors are
CEL expressions over one `device` (its `driver`, `attributes[domain].name` and
`capacity[domain].name`). The scheduler asks "would the devices an instance type publishes pass
these selectors?", so it evaluates them itself, against the devices `model.dra` says a type
publishes.

Why not a CEL library: cel-python (PyPI `cel-python`, the maintained pure-Python one) implements
the CEL standard, not the Kubernetes extension libraries DRA expressions lean on (`quantity()`
with `compareTo`/`isGreaterThan`, `semver()`), and it pulls a grammar toolkit (lark) into every
Lambda cold start for the handful of forms selectors use. This module is one small recursive-
descent parser for that subset; anything outside it is an `UnsupportedExpression` naming what
was met, never a silent match.

The subset (CEL's own semantics unless noted):

    literals        "s" 's' 12 1.5 true false null
    names           device  (the only variable)
    member / index  device.driver  device.attributes["gpu.nvidia.com"].productName
                    device.capacity['gpu.nvidia.com'].memory
    operators       ! - * / % + - < <= > >= == != in && || ?:   (parentheses)
    functions       quantity("40Gi")  semver("550.54.0")  size(x)  string(x)  int(x)
    methods         s.startsWith(p) s.endsWith(p) s.contains(p) s.matches(re) s.lowerAscii()
                    s.upperAscii() q.compareTo(q2) q.isGreaterThan(q2) q.isLessThan(q2)
                    q.asInteger() v.major() v.minor() v.patch() (semver, compareTo too)
    lists           [a, b] for `x in [..]`

As in Kubernetes: an unknown domain in `device.attributes[...]` or `device.capacity[...]` is an
empty map, and an unknown attribute name in it is an error ("no such key"). `&&` and `||` absorb
an error on one side when the other decides the result (false / true), as CEL's logical
operators are commutative over errors, so `device.driver == "x" && device.attributes["x"].y`
skips other drivers' devices. An expression that does not give a bool is an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from nodewright.model.quantity import parse_quantity

MAX_EXPRESSION = 10_240  # Kubernetes' own limit on a selector expression's length


class CelError(ValueError):
    """An expression that cannot be evaluated on a device (a missing attribute, a type mismatch)."""


class UnsupportedExpression(ValueError):
    """An expression outside the subset this module evaluates, or not CEL at all."""


@dataclass(frozen=True, slots=True, order=True)
class Quantity:
    """A Kubernetes resource quantity (`quantity("40Gi")`, or a device capacity), exactly."""

    value: Fraction

    def compare(self, other: object) -> int:
        if not isinstance(other, Quantity):
            raise CelError(f"compareTo needs a quantity, got {_type_name(other)}")
        return (self.value > other.value) - (self.value < other.value)


@dataclass(frozen=True, slots=True, order=True)
class Semver:
    """A semantic version (`semver("550.54.15")`), compared by major, minor, patch."""

    parts: tuple[int, int, int]

    @classmethod
    def parse(cls, text: str) -> Semver:
        match = re.fullmatch(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?", text.strip())
        if match is None:
            raise CelError(f"not a semantic version: {text!r}")
        major, minor, patch = (int(g or 0) for g in match.groups())
        return cls((major, minor, patch))

    def compare(self, other: object) -> int:
        if not isinstance(other, Semver):
            raise CelError(f"compareTo needs a semver, got {_type_name(other)}")
        return (self.parts > other.parts) - (self.parts < other.parts)


@dataclass(frozen=True, slots=True)
class Device:
    """What a selector sees of one device: its driver, and attributes and capacities by domain."""

    driver: str
    attributes: Mapping[str, Mapping[str, object]]
    capacity: Mapping[str, Mapping[str, Quantity]]


# -- parsing -------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<num>\d+\.\d+|\d+)
      | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!?:.,()\[\]])
    )""",
    re.VERBOSE,
)
_BINARY = MappingProxyType(
    {
        "||": 1,
        "&&": 2,
        "==": 3,
        "!=": 3,
        "<": 3,
        "<=": 3,
        ">": 3,
        ">=": 3,
        "in": 3,
        "+": 4,
        "-": 4,
        "*": 5,
        "/": 5,
        "%": 5,
    }
)
Node = tuple[Any, ...]


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise UnsupportedExpression(f"unexpected {text[position:].lstrip()[:20]!r} at offset {position}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        position = match.end()
    return out


class _Parser:
    """Recursive descent over the token list; builds tuples `(kind, ...)` for `_evaluate`."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise UnsupportedExpression(f"expression ends early{f', expected {expected!r}' if expected else ''}")
        token = self.tokens[self.at]
        if expected is not None and token[1] != expected:
            raise UnsupportedExpression(f"expected {expected!r}, found {token[1]!r}")
        self.at += 1
        return token

    def expression(self) -> Node:
        condition = self.binary(1)
        if self.peek() == "?":
            self.take("?")
            then = self.expression()
            self.take(":")
            return ("if", condition, then, self.expression())
        return condition

    def binary(self, level: int) -> Node:
        left = self.unary()
        while True:
            op = self.peek()
            precedence = _BINARY.get(op or "")
            if precedence is None or precedence < level or op is None:
                return left
            self.take()
            left = ("op", op, left, self.binary(precedence + 1))

    def unary(self) -> Node:
        if self.peek() == "!":
            self.take()
            return ("not", self.unary())
        if self.peek() == "-":
            self.take()
            return ("neg", self.unary())
        return self.postfix(self.primary())

    def postfix(self, node: Node) -> Node:
        while self.peek() in (".", "["):
            if self.take()[1] == "[":
                index = self.expression()
                self.take("]")
                node = ("index", node, index)
                continue
            kind, name = self.take()
            if kind != "name":
                raise UnsupportedExpression(f"expected a field name after '.', found {name!r}")
            if self.peek() == "(":
                node = ("call", name, node, self.arguments())
            else:
                node = ("field", node, name)
        return node

    def arguments(self) -> tuple[Node, ...]:
        self.take("(")
        args: list[Node] = []
        while self.peek() != ")":
            args.append(self.expression())
            if self.peek() != ")":
                self.take(",")
        self.take(")")
        return tuple(args)

    def primary(self) -> Node:
        kind, text = self.take()
        if kind == "num":
            return ("lit", Fraction(text) if "." in text else int(text))
        if kind == "str":
            return ("lit", _unquote(text))
        if kind == "name":
            if text in ("true", "false"):
                return ("lit", text == "true")
            if text == "null":
                return ("lit", None)
            if self.peek() == "(":
                return ("call", text, None, self.arguments())
            if text != "device":
                raise UnsupportedExpression(f"unknown name {text!r}: a device selector has only `device`")
            return ("device",)
        if text == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if text == "[":
            items: list[Node] = []
            while self.peek() != "]":
                items.append(self.expression())
                if self.peek() != "]":
                    self.take(",")
            self.take("]")
            return ("list", tuple(items))
        raise UnsupportedExpression(f"unexpected {text!r}")


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


@dataclass(frozen=True, slots=True)
class Selector:
    """One parsed selector expression; `matches(device)` evaluates it."""

    expression: str
    tree: Node

    @classmethod
    def parse(cls, expression: str) -> Selector:
        """Parse; raise UnsupportedExpression naming what is outside the subset."""
        if len(expression) > MAX_EXPRESSION:
            raise UnsupportedExpression(f"longer than {MAX_EXPRESSION} characters")
        parser = _Parser(expression)
        if not parser.tokens:
            raise UnsupportedExpression("empty expression")
        tree = parser.expression()
        if parser.at != len(parser.tokens):
            raise UnsupportedExpression(f"unexpected {parser.tokens[parser.at][1]!r} after a complete expression")
        return cls(expression, tree)

    def matches(self, device: Device) -> bool:
        """True when the expression gives true for `device`; CelError when it errs or is not a bool."""
        value = _evaluate(self.tree, device)
        if not isinstance(value, bool):
            raise CelError(f"gives {_type_name(value)}, not a bool")
        return value


# -- evaluation ----------------------------------------------------------------------------------


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    return {int: "int", Fraction: "double", str: "string", type(None): "null"}.get(type(value), type(value).__name__)


class _Domains:
    """`device.attributes` / `device.capacity`: an unknown domain is an empty map, not an error."""

    def __init__(self, by_domain: Mapping[str, Mapping[str, object]], what: str) -> None:
        self.by_domain = by_domain
        self.what = what

    def get(self, domain: object) -> _Names:
        if not isinstance(domain, str):
            raise CelError(f"{self.what} is keyed by a domain string")
        return _Names(self.by_domain.get(domain) or {}, f"{self.what}[{domain!r}]")


class _Names:
    """One domain's attributes or capacities: an unknown name is an error ("no such key")."""

    def __init__(self, values: Mapping[str, object], where: str) -> None:
        self.values = values
        self.where = where

    def get(self, name: object) -> object:
        if not isinstance(name, str) or name not in self.values:
            raise CelError(f"no such key: {name!r} in {self.where}")
        return self.values[name]


def _evaluate(node: Node, device: Device) -> object:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "device":
        return device
    if kind == "list":
        return [_evaluate(item, device) for item in node[1]]
    if kind in ("field", "index"):
        base = _evaluate(node[1], device)
        key = node[2] if kind == "field" else _evaluate(node[2], device)
        return _member(base, key)
    if kind == "not":
        value = _evaluate(node[1], device)
        if not isinstance(value, bool):
            raise CelError(f"! needs a bool, got {_type_name(value)}")
        return not value
    if kind == "neg":
        value = _evaluate(node[1], device)
        if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
            raise CelError(f"- needs a number, got {_type_name(value)}")
        return -value
    if kind == "if":
        condition = _evaluate(node[1], device)
        if not isinstance(condition, bool):
            raise CelError("?: needs a bool condition")
        return _evaluate(node[2] if condition else node[3], device)
    if kind == "op":
        return _operator(node[1], node[2], node[3], device)
    if kind == "call":
        receiver = None if node[2] is None else _evaluate(node[2], device)
        args = [_evaluate(a, device) for a in node[3]]
        return _call(node[1], receiver, args, node[2] is not None)
    raise UnsupportedExpression(f"unknown node {kind}")


def _member(base: object, key: object) -> object:
    if isinstance(base, Device):
        if key == "driver":
            return base.driver
        if key == "attributes":
            return _Domains(base.attributes, "device.attributes")
        if key == "capacity":
            return _Domains(base.capacity, "device.capacity")
        raise CelError(f"no such key: {key!r} in device")
    if isinstance(base, (_Domains, _Names)):
        return base.get(key)
    if isinstance(base, Mapping):
        if key not in base:
            raise CelError(f"no such key: {key!r}")
        return base[key]
    if isinstance(base, list) and isinstance(key, int) and not isinstance(key, bool):
        if not 0 <= key < len(base):
            raise CelError(f"index {key} out of range")
        return base[key]
    raise CelError(f"cannot select {key!r} from {_type_name(base)}")


def _logical(op: str, left: Node, right: Node, device: Device) -> bool:
    """`&&` / `||` with CEL's error absorption: a deciding side wins over an error on the other."""
    decisive = op == "||"  # the value that decides the result on its own
    error: CelError | None = None
    for side in (left, right):
        try:
            value = _evaluate(side, device)
        except CelError as caught:
            error = error or caught
            continue
        if not isinstance(value, bool):
            raise CelError(f"{op} needs bools, got {_type_name(value)}")
        if value is decisive:
            return decisive
    if error is not None:
        raise error
    return not decisive


_COMPARE: Mapping[str, Callable[[int], bool]] = MappingProxyType(
    {
        "<": lambda c: c < 0,
        "<=": lambda c: c <= 0,
        ">": lambda c: c > 0,
        ">=": lambda c: c >= 0,
    }
)


def _operator(op: str, left_node: Node, right_node: Node, device: Device) -> object:
    if op in ("&&", "||"):
        return _logical(op, left_node, right_node, device)
    left = _evaluate(left_node, device)
    right = _evaluate(right_node, device)
    if op == "in":
        if isinstance(right, list):
            return any(_equal(left, item) for item in right)
        if isinstance(right, (_Names, Mapping)):
            values = right.values if isinstance(right, _Names) else right
            return left in values
        raise CelError(f"'in' needs a list or map, got {_type_name(right)}")
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op in _COMPARE:
        return _COMPARE[op](_order(left, right))
    return _arithmetic(op, left, right)


def _number(value: object) -> bool:
    return isinstance(value, (int, Fraction)) and not isinstance(value, bool)


def _equal(left: object, right: object) -> bool:
    if _number(left) and _number(right):
        return left == right
    if type(left) is not type(right) and not (left is None or right is None):
        raise CelError(f"no such overload: {_type_name(left)} == {_type_name(right)}")
    return left == right


def _order(left: object, right: object) -> int:
    if isinstance(left, str) and isinstance(right, str):
        return (left > right) - (left < right)
    if isinstance(left, (int, Fraction)) and isinstance(right, (int, Fraction)) and _number(left) and _number(right):
        return (left > right) - (left < right)
    raise CelError(
        f"no such overload: {_type_name(left)} < {_type_name(right)}"
        + (" (compare quantities with compareTo)" if isinstance(left, Quantity) else "")
    )


def _arithmetic(op: str, left: object, right: object) -> object:
    if op == "+" and isinstance(left, str) and isinstance(right, str):
        return left + right
    if not (_number(left) and _number(right)):
        raise CelError(f"no such overload: {_type_name(left)} {op} {_type_name(right)}")
    a = left if isinstance(left, int) else Fraction(str(left))
    b = right if isinstance(right, int) else Fraction(str(right))
    if op in ("/", "%") and b == 0:
        raise CelError("division by zero")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "%":
        return a % b
    return a // b if isinstance(a, int) and isinstance(b, int) else Fraction(a) / Fraction(b)


def _call(name: str, receiver: object, args: Sequence[object], method: bool) -> object:
    if not method:
        if name == "quantity" and len(args) == 1 and isinstance(args[0], str):
            try:
                return Quantity(parse_quantity(args[0]))
            except (ValueError, ArithmeticError) as error:
                raise CelError(f"quantity({args[0]!r}): {error}") from None
        if name == "semver" and len(args) == 1 and isinstance(args[0], str):
            return Semver.parse(args[0])
        if name == "size" and len(args) == 1:
            return _size(args[0])
        if name == "string" and len(args) == 1:
            return str(args[0]).lower() if isinstance(args[0], bool) else str(args[0])
        if name == "int" and len(args) == 1 and isinstance(args[0], (int, Fraction)):
            return int(args[0])
        raise UnsupportedExpression(f"function {name}() with {len(args)} argument(s) is not supported")
    if isinstance(receiver, str):
        return _string_method(name, receiver, args)
    if isinstance(receiver, (Quantity, Semver)):
        if name == "compareTo" and len(args) == 1:
            return receiver.compare(args[0])
        if name == "isGreaterThan" and len(args) == 1:
            return receiver.compare(args[0]) > 0
        if name == "isLessThan" and len(args) == 1:
            return receiver.compare(args[0]) < 0
        if isinstance(receiver, Quantity) and name == "asInteger" and not args:
            return int(receiver.value)
        if isinstance(receiver, Semver) and name in ("major", "minor", "patch") and not args:
            return receiver.parts[("major", "minor", "patch").index(name)]
    if name == "size" and not args:
        return _size(receiver)
    raise UnsupportedExpression(f"method {name}() on {_type_name(receiver)} is not supported")


def _string_method(name: str, text: str, args: Sequence[object]) -> object:
    if name in ("startsWith", "endsWith", "contains", "matches") and len(args) == 1 and isinstance(args[0], str):
        arg = args[0]
        if name == "startsWith":
            return text.startswith(arg)
        if name == "endsWith":
            return text.endswith(arg)
        if name == "contains":
            return arg in text
        try:
            return re.search(arg, text) is not None
        except re.error as error:
            raise CelError(f"matches({arg!r}): {error}") from None
    if name == "lowerAscii" and not args:
        return text.lower()
    if name == "upperAscii" and not args:
        return text.upper()
    if name == "size" and not args:
        return len(text)
    raise UnsupportedExpression(f"method {name}() on string is not supported")


def _size(value: object) -> int:
    if isinstance(value, (str, list)):
        return len(value)
    if isinstance(value, _Names):
        return len(value.values)
    raise CelError(f"size() of {_type_name(value)}")
