"""Sandboxed expressions for breakpoint conditions and logpoint templates.

Conditions (``state['count'] > 2 and node == 'b'``) and log templates (``"count is
{state[count]}"``) are strings that may arrive over the network, so they are treated as untrusted
input:

* :func:`compile_expression` parses a condition once and checks it *statically* against an
  explicit whitelist of syntax, names, functions and methods, so that a mistake or an escape
  attempt is reported when the breakpoint is set, not at its thousandth evaluation.
* :meth:`Expression.evaluate` runs the pre-parsed tree with ``simpleeval`` (its compound-types
  evaluator) extended with a few guards: method calls are bound only on the receiver types they
  make sense for, string ``%``-formatting is refused, and ``**``, ``*``, ``+``, ``str()``,
  ``sum()``, ``str.replace`` and f-string format specs are bounded so that an expression cannot
  exhaust memory.
* :func:`check_template` / :func:`render_template` handle ``str.format``-style templates with a
  :class:`string.Formatter` that refuses private attributes and keys, caps widths and
  precisions, and renders a failing field as ``<error: KeyError 'count'>`` instead of raising.

Evaluation never shares mutable evaluator state between threads: every thread keeps a small
pool of evaluators, so concurrent (and re-entrant) evaluations of one :class:`Expression` are
safe.
"""

from __future__ import annotations

import ast
import difflib
import math
import numbers
import string
import threading
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, TypeAlias

import simpleeval
from simpleeval import (
    EvalWithCompoundTypes,
    FeatureNotAvailable,
    FunctionNotDefined,
    IterableTooLong,
    NumberTooHigh,
)

from flowdbg.errors import ExpressionError

__all__ = [
    "SAFE_FUNCTIONS",
    "Expression",
    "ExpressionEvaluationError",
    "check_template",
    "compile_expression",
    "render_template",
]

# ---------------------------------------------------------------------------------------------
# Limits

#: Longest accepted condition or template, in characters.
MAX_SOURCE_LENGTH = 2000
#: Deepest accepted nesting of syntax nodes in a condition.
MAX_NESTING = 100
#: Largest width or precision accepted in a format spec (``{x:>1000}``).
MAX_FORMAT_WIDTH = 1000
#: Largest integer result of ``a ** b``, in bits (simpleeval's own MAX_POWER also applies).
MAX_POWER_BITS = 65_536
#: Longest sequence a single ``*`` or ``+`` may build (simpleeval's own limit).
MAX_SEQUENCE_LENGTH = simpleeval.MAX_STRING_LENGTH
#: Total size of the sequences ``*`` and ``+`` may build during one evaluation.
MAX_ALLOCATION = 10 * simpleeval.MAX_STRING_LENGTH
#: Longest text ``str()`` or an f-string field may produce from a list, tuple, dict or set.
MAX_TEXT_LENGTH = 1_000_000

_QUOTE_LIMIT = 120

# ---------------------------------------------------------------------------------------------
# Errors


class ExpressionEvaluationError(ExpressionError):
    """Evaluating a compiled condition failed at run time (missing key, type error, limit, ...).

    The original exception is chained as ``__cause__``.
    """


def _quote(text: str) -> str:
    """``repr`` of *text*, shortened so that error messages stay readable."""
    if len(text) > _QUOTE_LIMIT:
        return repr(text[: _QUOTE_LIMIT - 3] + "...")
    return repr(text)


def _describe_exception(exc: BaseException, separator: str = " ") -> str:
    try:
        detail = str(exc)
    except Exception:  # a broken __str__ must not hide the original error
        detail = ""
    if len(detail) > 300:
        detail = detail[:297] + "..."
    name = type(exc).__name__
    return f"{name}{separator}{detail}" if detail else name


def _short_number(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 64:
        return f"<{value.bit_length()}-bit integer>"
    return repr(value)


# ---------------------------------------------------------------------------------------------
# Bounded building blocks shared by the static check and the evaluator

_CONTAINERS = (list, tuple, dict, set, frozenset)
_TEXT_TYPES = (str, bytes, bytearray)
_SEQUENCES = (str, bytes, bytearray, list, tuple)


def _power_refusal(base: object, exponent: object) -> str | None:
    """Why ``base ** exponent`` is too expensive to compute, or None when it is fine."""
    numeric = (int, float)
    if not (isinstance(base, numeric) and isinstance(exponent, numeric)):
        return None
    if abs(base) > simpleeval.MAX_POWER or abs(exponent) > simpleeval.MAX_POWER:
        return f"the base and the exponent may be at most {simpleeval.MAX_POWER}"
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        bits = exponent * math.log2(abs(base))
        if bits > MAX_POWER_BITS:
            return (
                f"the result would have about {int(bits)} bits, more than the limit of "
                f"{MAX_POWER_BITS}"
            )
    return None


def _spec_refusal(spec: str) -> str | None:
    """Why a format spec is refused (a width or precision above the limit), or None."""
    number = ""
    for char in spec + " ":
        if char.isdecimal():
            number += char
            continue
        if number:
            digits = number.lstrip("0")
            if len(digits) > len(str(MAX_FORMAT_WIDTH)) or int(digits or "0") > MAX_FORMAT_WIDTH:
                return (
                    f"a width or precision of {number} is more than the limit of {MAX_FORMAT_WIDTH}"
                )
            number = ""
    return None


def _deep_size(value: object, limit: int, *, count_characters: bool = True) -> int:
    """Number of slots (and characters) reachable from *value*, counting shared parts each time.

    This is what repeating, comparing or printing *value* costs. Strings count as their length,
    or as nothing when *count_characters* is false. Counting stops once the total exceeds
    *limit*, so the cost of counting is bounded by *limit*.
    """
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, _TEXT_TYPES):
            total += len(item) if count_characters else 0
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += len(item)
            if total <= limit:
                stack.extend(item)
        elif isinstance(item, dict):
            total += 2 * len(item)
            if total <= limit:
                stack.extend(item.keys())
                stack.extend(item.values())
    return total


def _text_length_estimate(value: object, limit: int) -> int:
    """A rough upper estimate of ``len(str(value))`` for builtin containers.

    Other objects inside the containers are measured with ``repr`` once each. Counting stops
    once the total exceeds *limit* (a cyclic container therefore counts as too long).
    """
    total = 0
    measured: dict[int, int] = {}
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, _TEXT_TYPES):
            total += len(item) + 4
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 + 2 * len(item)
            if total <= limit:
                stack.extend(item)
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            if total <= limit:
                stack.extend(item.keys())
                stack.extend(item.values())
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 2
        elif item is None or isinstance(item, (float, complex)):
            total += 24
        else:
            size = measured.get(id(item))
            if size is None:
                try:
                    size = len(repr(item))
                except Exception:  # str() of the container will report it
                    size = 1
                measured[id(item)] = size
            total += size + 1
    return total


def _check_text_length(value: object) -> None:
    if isinstance(value, _CONTAINERS):
        estimate = _text_length_estimate(value, MAX_TEXT_LENGTH)
        if estimate > MAX_TEXT_LENGTH:
            raise IterableTooLong(
                f"the text of this {type(value).__name__} would be longer than "
                f"{MAX_TEXT_LENGTH} characters"
            )


def _safe_str(obj: object = "", *args: Any, **kwargs: Any) -> str:
    """``str()`` that refuses to render containers into more than MAX_TEXT_LENGTH characters."""
    if args or kwargs:
        return str(obj, *args, **kwargs)
    _check_text_length(obj)
    return str(obj)


def _safe_sum(iterable: Iterable[Any], /, start: Any = 0) -> Any:
    """``sum()`` of numbers only: a list or tuple start value would concatenate without bound."""
    if not isinstance(start, numbers.Number):
        raise TypeError(
            f"sum() start value must be a number, not {type(start).__name__}; "
            "concatenating sequences with sum() is not allowed"
        )
    initial: Any = start
    return sum(iterable, initial)


def _format_value(value: object, conversion: int | str | None, spec: str) -> str:
    """Apply an f-string / ``str.format`` conversion and spec, within the limits."""
    refusal = _spec_refusal(spec)
    if refusal is not None:
        raise ValueError(f"format spec {spec!r} is too large: {refusal}")
    if conversion in (None, -1):
        _check_text_length(value)
    elif conversion in ("s", ord("s")):
        _check_text_length(value)
        value = str(value)
    elif conversion in ("r", ord("r")):
        _check_text_length(value)
        value = repr(value)
    elif conversion in ("a", ord("a")):
        _check_text_length(value)
        value = ascii(value)
    else:
        raise ValueError(f"unknown conversion {conversion!r}")
    return format(value, spec)


#: Functions a condition may call, by name. Treat as read-only.
SAFE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "all": all,
    "any": any,
    "bool": bool,
    "dict": dict,
    "float": float,
    "int": int,
    "len": len,
    "list": list,
    "max": max,
    "min": min,
    "round": round,
    "set": set,
    "sorted": sorted,
    "str": _safe_str,
    "sum": _safe_sum,
    "tuple": tuple,
}

# Methods a condition may call, with the receiver types each one may be called on: a method
# name alone is not enough (``pathlib.Path.replace`` renames files, ``os.replace`` too).
_METHOD_RECEIVERS: dict[str, tuple[tuple[type, ...], str]] = {}
for _name in ("get", "keys", "values", "items"):
    _METHOD_RECEIVERS[_name] = ((Mapping,), "a mapping")
for _name in (
    "startswith",
    "endswith",
    "lower",
    "upper",
    "strip",
    "lstrip",
    "rstrip",
    "split",
    "find",
    "isdigit",
    "isalpha",
    "casefold",
    "replace",
):
    _METHOD_RECEIVERS[_name] = ((str, bytes, bytearray), "a string")
for _name in ("count", "index"):
    _METHOD_RECEIVERS[_name] = ((Sequence, bytearray), "a string, list or tuple")
del _name

_SAFE_METHODS = frozenset(_METHOD_RECEIVERS)
_KEY_FUNCTIONS = frozenset(SAFE_FUNCTIONS.values())


def _bounded_replace(text: Any, *args: Any, **kwargs: Any) -> Any:
    """``str.replace`` that refuses to grow a string beyond MAX_SEQUENCE_LENGTH."""
    old = args[0] if args else None
    new = args[1] if len(args) > 1 else None
    if isinstance(old, _TEXT_TYPES) and isinstance(new, _TEXT_TYPES):
        matches = text.count(old)  # raises TypeError for a str/bytes mix, as replace() would
        limit = args[2] if len(args) > 2 else kwargs.get("count", -1)
        if isinstance(limit, int) and limit >= 0:
            matches = min(matches, limit)
        size = len(text) + matches * (len(new) - len(old))
        if size > MAX_SEQUENCE_LENGTH and size > len(text):
            raise IterableTooLong(
                f"replace() would build a string of {size} characters, more than the "
                f"limit of {MAX_SEQUENCE_LENGTH}"
            )
    return text.replace(*args, **kwargs)


def _bind_method(receiver: object, name: str) -> Callable[..., Any]:
    allowed = _METHOD_RECEIVERS.get(name)
    if allowed is None:
        raise FeatureNotAvailable(f"method .{name}() is not allowed")
    types_, description = allowed
    if isinstance(receiver, type) or not isinstance(receiver, types_):
        raise FeatureNotAvailable(
            f"method .{name}() can only be called on {description}, "
            f"not on {type(receiver).__name__}"
        )
    if name == "replace":
        return lambda *args, **kwargs: _bounded_replace(receiver, *args, **kwargs)
    method: Callable[..., Any] = getattr(receiver, name)
    return method


# ---------------------------------------------------------------------------------------------
# The evaluator


class _Evaluator(EvalWithCompoundTypes):
    """simpleeval's compound-types evaluator with flowdbg's runtime guards.

    Instances are cheap to reuse but not thread-safe (comprehensions swap handlers in
    ``self.nodes``), so each one serves one evaluation at a time: :meth:`Expression.evaluate`
    takes one from a per-thread pool and puts it back afterwards.
    """

    def __init__(self) -> None:
        operators = dict(simpleeval.DEFAULT_OPERATORS)
        operators[ast.Pow] = self._power
        operators[ast.Mult] = self._multiply
        operators[ast.Add] = self._add
        operators[ast.Mod] = self._modulo
        super().__init__(operators=operators, functions=dict(SAFE_FUNCTIONS), names={})
        self.functions.update(SAFE_FUNCTIONS)  # the base class adds the plain list/tuple/...
        self.nodes[ast.Call] = self._eval_call_checked
        self.nodes[ast.FormattedValue] = self._eval_formatted_value
        self.nodes[ast.SetComp] = self._eval_set_comprehension
        self.allocated = 0

    def run(self, source: str, body: ast.expr, names: Mapping[str, Any]) -> Any:
        self.names = names
        self.allocated = 0
        try:
            return self.eval(source, previously_parsed=body)
        finally:
            self.names = _NO_NAMES

    # simpleeval walks every value a node produces, recursively through containers, looking for
    # modules and forbidden functions. Every intermediate value passes through here, so a
    # shallow check is enough, and it keeps ``state`` lookups O(1) and cycle-safe.
    def _check_disallowed_items(self, item: Any) -> None:
        if type(item) in _SCALARS:
            return
        if isinstance(item, types.ModuleType):
            raise FeatureNotAvailable("modules are not accessible in conditions")
        if callable(item):
            try:
                forbidden = item in simpleeval.DISALLOW_FUNCTIONS
            except TypeError:  # unhashable callable
                forbidden = False
            if forbidden:
                raise FeatureNotAvailable("this function is forbidden")

    def _charge(self, size: int) -> None:
        self.allocated += size
        if self.allocated > MAX_ALLOCATION:
            raise IterableTooLong(
                f"the condition builds more than {MAX_ALLOCATION} items or characters in total"
            )

    @staticmethod
    def _power(base: Any, exponent: Any) -> Any:
        refusal = _power_refusal(base, exponent)
        if refusal is not None:
            raise NumberTooHigh(
                f"{_short_number(base)} ** {_short_number(exponent)} is too large: {refusal}"
            )
        return simpleeval.safe_power(base, exponent)

    def _multiply(self, left: Any, right: Any) -> Any:
        sequence, count = (left, right) if isinstance(left, _SEQUENCES) else (right, left)
        times = int(count) if isinstance(count, numbers.Integral) else 0
        if isinstance(sequence, _SEQUENCES) and times > 0:
            size = times * _deep_size(sequence, MAX_SEQUENCE_LENGTH)
            if size > MAX_SEQUENCE_LENGTH:
                raise IterableTooLong(
                    f"repeating a {type(sequence).__name__} {count} times would build more "
                    f"than {MAX_SEQUENCE_LENGTH} items or characters"
                )
            self._charge(size)
        return left * right

    def _add(self, left: Any, right: Any) -> Any:
        if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
            self._charge(len(left) + len(right))
        return simpleeval.safe_add(left, right)

    @staticmethod
    def _modulo(left: Any, right: Any) -> Any:
        if isinstance(left, _TEXT_TYPES):
            raise FeatureNotAvailable("%-formatting of strings is not allowed; use an f-string")
        return left % right

    def _eval_call_checked(self, node: ast.Call) -> Any:
        callee = node.func
        if isinstance(callee, ast.Name):
            try:
                function: Callable[..., Any] = self.functions[callee.id]
            except KeyError:
                raise FunctionNotDefined(callee.id, self.expr) from None
        elif isinstance(callee, ast.Attribute):
            function = _bind_method(self._eval(callee.value), callee.attr)
        else:
            raise FeatureNotAvailable("only the allowed functions and methods can be called")
        args = [self._eval(arg) for arg in node.args]
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise FeatureNotAvailable("**-unpacking in calls is not allowed")
            kwargs[keyword.arg] = self._eval(keyword.value)
        key = kwargs.get("key")
        if key is not None and not any(key is allowed for allowed in _KEY_FUNCTIONS):
            raise FeatureNotAvailable("key= must be one of the allowed functions")
        return function(*args, **kwargs)

    def _eval_formatted_value(self, node: ast.FormattedValue) -> str:
        value = self._eval(node.value)
        spec = "" if node.format_spec is None else str(self._eval(node.format_spec))
        return _format_value(value, node.conversion, spec)

    def _eval_set_comprehension(self, node: ast.SetComp) -> set[Any]:
        return set(self._eval_comprehension(node))

    def _eval_comprehension(self, node: ast.expr) -> Any:
        # simpleeval caps the number of elements; the elements themselves can still be big
        # containers yielded many times (``[b for b in [[0.5] * 99999] for c in 'x' * 9999]``),
        # which makes comparing or printing the result take minutes. Charge every container
        # element by the slots it reaches (characters are cheap to compare and not counted).
        result = super()._eval_comprehension(node)
        elements = [*result.keys(), *result.values()] if isinstance(result, dict) else result
        remaining = MAX_ALLOCATION - self.allocated
        for element in elements:
            if isinstance(element, _CONTAINERS):
                self._charge(_deep_size(element, remaining, count_characters=False))
                remaining = MAX_ALLOCATION - self.allocated
        return result


_SCALARS = frozenset({int, float, str, bool, type(None), bytes, complex})
_NO_NAMES: Mapping[str, Any] = types.MappingProxyType({})
_local = threading.local()


def _evaluator_pool() -> list[_Evaluator]:
    try:
        pool: list[_Evaluator] = _local.pool
    except AttributeError:
        pool = _local.pool = []
    return pool


# ---------------------------------------------------------------------------------------------
# Compiled expressions


class Expression:
    """A condition that passed the static check, ready to be evaluated many times.

    Create it with :func:`compile_expression`. ``source`` is the text as given and ``names`` the
    allowed names the expression reads (comprehension variables and functions excluded).
    """

    __slots__ = ("_body", "names", "source")

    source: str
    names: frozenset[str]

    def __init__(self, source: str, names: frozenset[str], body: ast.expr) -> None:
        self.source = source
        self.names = names
        self._body = body

    def evaluate(self, names: Mapping[str, Any]) -> Any:
        """Evaluate the expression with *names* bound to their values and return the result.

        Raises :class:`ExpressionEvaluationError` (chained to the original exception) when the
        evaluation fails: a missing key, a type error, a division by zero, a size limit, ...
        """
        pool = _evaluator_pool()
        evaluator = pool.pop() if pool else _Evaluator()
        try:
            return evaluator.run(self.source, self._body, names)
        except Exception as exc:
            problem = _describe_exception(exc, ": ")
            raise ExpressionEvaluationError(
                f"evaluating {_quote(self.source)} failed: {problem}"
            ) from exc
        finally:
            pool.append(evaluator)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Expression):
            return NotImplemented
        return self.source == other.source and self.names == other.names

    def __hash__(self) -> int:
        return hash((self.source, self.names))


# ---------------------------------------------------------------------------------------------
# The static check

_OPERATOR_NODES: frozenset[type] = frozenset(
    {
        ast.And,
        ast.Or,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.Div,
        ast.FloorDiv,
        ast.Mod,
        ast.Pow,
        ast.LShift,
        ast.RShift,
        ast.BitOr,
        ast.BitXor,
        ast.BitAnd,
        ast.Not,
        ast.Invert,
        ast.UAdd,
        ast.USub,
        ast.Eq,
        ast.NotEq,
        ast.Lt,
        ast.LtE,
        ast.Gt,
        ast.GtE,
        ast.Is,
        ast.IsNot,
        ast.In,
        ast.NotIn,
        ast.Load,
    }
)

# Nodes whose children need no special treatment beyond the generic check.
_PLAIN_NODES: frozenset[type] = frozenset(
    {
        ast.BoolOp,
        ast.UnaryOp,
        ast.Compare,
        ast.IfExp,
        ast.Subscript,
        ast.Slice,
        ast.Tuple,
        ast.Set,
        ast.Dict,
    }
)

_FORBIDDEN_SYNTAX: dict[type, str] = {
    ast.Lambda: "lambda functions are not allowed",
    ast.NamedExpr: "assignment expressions (:=) are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "yield is not allowed",
    ast.YieldFrom: "yield from is not allowed",
    ast.Starred: "*-unpacking is only allowed inside list literals",
    ast.MatMult: "the @ operator is not supported",
}

_EXAMPLE = "\"state['count'] > 2\""


def _list_names(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "(none)"


class _Checker:
    """Walks a parsed condition and raises ExpressionError for anything not whitelisted."""

    def __init__(self, source: str, allowed: frozenset[str]) -> None:
        self.source = source
        self.allowed = allowed
        self.used: set[str] = set()

    def fail(self, problem: str, fix: str, detail: str = "") -> ExpressionError:
        where = f"in condition {_quote(self.source)}" + (f" ({detail})" if detail else "")
        return ExpressionError(f"{problem} {where}; {fix}")

    def functions_hint(self) -> str:
        return (
            f"allowed functions are {_list_names(SAFE_FUNCTIONS)} and allowed methods are "
            + ", ".join(f".{name}()" for name in sorted(_SAFE_METHODS))
        )

    def check(self, node: ast.AST, scope: frozenset[str]) -> None:
        kind = type(node)
        if kind in _OPERATOR_NODES:
            return
        if kind in _PLAIN_NODES:
            self.check_children(node, scope)
        elif isinstance(node, ast.Constant):
            return
        elif isinstance(node, ast.Name):
            self.check_name(node.id, scope)
        elif isinstance(node, ast.Attribute):
            self.check_attribute(node.attr)
            self.check(node.value, scope)
        elif isinstance(node, ast.BinOp):
            self.check_binop(node, scope)
        elif isinstance(node, ast.Call):
            self.check_call(node, scope)
        elif isinstance(node, ast.List):
            for element in node.elts:
                inner = element.value if isinstance(element, ast.Starred) else element
                self.check(inner, scope)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            self.check_comprehension(node, scope)
        elif isinstance(node, ast.JoinedStr):
            self.check_children(node, scope)
        elif isinstance(node, ast.FormattedValue):
            self.check_formatted_value(node, scope)
        else:
            raise self.fail(
                _FORBIDDEN_SYNTAX.get(kind, f"{kind.__name__} syntax is not allowed"),
                "use only comparisons, boolean and arithmetic operators, literals, "
                "subscripts, attributes, comprehensions and calls to the allowed functions",
            )

    def check_children(self, node: ast.AST, scope: frozenset[str]) -> None:
        for child in ast.iter_child_nodes(node):
            self.check(child, scope)

    def check_name(self, name: str, scope: frozenset[str]) -> None:
        if name in scope:
            return
        if name.startswith("_"):
            raise self.fail(
                f"name {name!r} is not allowed",
                f"names starting with '_' are private; available names: "
                f"{_list_names(self.allowed)}",
            )
        if name in self.allowed:
            self.used.add(name)
            return
        if name in SAFE_FUNCTIONS:
            return
        fix = f"available names: {_list_names(self.allowed)}"
        close = difflib.get_close_matches(name, self.allowed, n=1)
        if close:
            fix += f" (did you mean {close[0]!r}?)"
        elif "state" in self.allowed:
            fix += f" (to read a state key, write state[{name!r}])"
        raise self.fail(f"unknown name {name!r}", fix)

    def check_attribute(self, attribute: str) -> None:
        if attribute.startswith(tuple(simpleeval.DISALLOW_PREFIXES)):
            raise self.fail(
                f"attribute {attribute!r} is not allowed",
                "attributes starting with '_' (private and dunder attributes) cannot be read",
            )
        if attribute in simpleeval.DISALLOW_METHODS:
            raise self.fail(
                f"attribute {attribute!r} is not allowed",
                "it can be used to escape the sandbox; " + self.functions_hint(),
            )

    def check_binop(self, node: ast.BinOp, scope: frozenset[str]) -> None:
        if isinstance(node.op, ast.Mod) and (
            isinstance(node.left, ast.JoinedStr)
            or (isinstance(node.left, ast.Constant) and isinstance(node.left.value, _TEXT_TYPES))
        ):
            raise self.fail(
                "%-formatting of strings is not allowed", "use an f-string such as f'{node}'"
            )
        if isinstance(node.op, ast.Pow):
            base, exponent = _fold_constant(node.left), _fold_constant(node.right)
            if base is not None and exponent is not None:
                refusal = _power_refusal(base, exponent)
                if refusal is not None:
                    raise self.fail(
                        f"the power {_short_number(base)} ** {_short_number(exponent)} is too "
                        "large",
                        "use a smaller exponent or base",
                        refusal,
                    )
        self.check_children(node, scope)

    def check_call(self, node: ast.Call, scope: frozenset[str]) -> None:
        callee = node.func
        if isinstance(callee, ast.Name):
            if callee.id.startswith("_") or callee.id not in SAFE_FUNCTIONS:
                raise self.fail(f"function {callee.id!r} is not allowed", self.functions_hint())
        elif isinstance(callee, ast.Attribute):
            self.check_attribute(callee.attr)
            if callee.attr not in _SAFE_METHODS:
                raise self.fail(f"method .{callee.attr}() is not allowed", self.functions_hint())
            self.check(callee.value, scope)
        else:
            raise self.fail(
                "only functions and methods called by name are allowed", self.functions_hint()
            )
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                raise self.fail("*-unpacking in calls is not allowed", "pass arguments one by one")
            self.check(argument, scope)
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.fail("**-unpacking in calls is not allowed", "pass keywords one by one")
            if keyword.arg == "key" and not (
                isinstance(keyword.value, ast.Name)
                and keyword.value.id in SAFE_FUNCTIONS
                and keyword.value.id not in self.allowed
            ):
                raise self.fail(
                    "key= must name one of the allowed functions",
                    f"allowed functions are {_list_names(SAFE_FUNCTIONS)}",
                )
            self.check(keyword.value, scope)

    def check_comprehension(
        self,
        node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
        scope: frozenset[str],
    ) -> None:
        inner = scope
        for generator in node.generators:
            if generator.is_async:
                raise self.fail("async comprehensions are not allowed", "use a plain 'for'")
            self.check(generator.iter, inner)
            inner = inner | self.target_names(generator.target)
            for condition in generator.ifs:
                self.check(condition, inner)
        if isinstance(node, ast.DictComp):
            self.check(node.key, inner)
            self.check(node.value, inner)
        else:
            self.check(node.elt, inner)

    def target_names(self, target: ast.expr) -> frozenset[str]:
        if isinstance(target, ast.Name):
            name = target.id
            if name.startswith("_") and name != "_":
                raise self.fail(
                    f"comprehension variable {name!r} is not allowed",
                    "names starting with '_' are private; rename the variable",
                )
            if name in SAFE_FUNCTIONS:
                raise self.fail(
                    f"comprehension variable {name!r} hides the function of the same name",
                    "rename the variable",
                )
            return frozenset({name})
        if isinstance(target, (ast.Tuple, ast.List)):
            names: frozenset[str] = frozenset()
            for element in target.elts:
                names |= self.target_names(element)
            return names
        raise self.fail(
            "comprehension variables must be plain names or tuples of names",
            "write for example 'for key, value in state.items()'",
        )

    def check_formatted_value(self, node: ast.FormattedValue, scope: frozenset[str]) -> None:
        self.check(node.value, scope)
        if node.format_spec is None:
            return
        self.check(node.format_spec, scope)
        parts = node.format_spec.values if isinstance(node.format_spec, ast.JoinedStr) else []
        if all(isinstance(part, ast.Constant) for part in parts):
            spec = "".join(str(part.value) for part in parts if isinstance(part, ast.Constant))
            refusal = _spec_refusal(spec)
            if refusal is not None:
                raise self.fail(
                    f"the f-string format spec {spec!r} is too large",
                    "use a smaller number",
                    refusal,
                )


def _fold_constant(node: ast.expr) -> int | float | None:
    """The value of a constant numeric sub-expression, or None if it is not one (or too big)."""
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, (int, float)) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _fold_constant(node.operand)
        if operand is None:
            return None
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.Mult, ast.Add, ast.Sub)):
        left, right = _fold_constant(node.left), _fold_constant(node.right)
        if left is None or right is None:
            return None
        try:
            if isinstance(node.op, ast.Pow):
                if _power_refusal(left, right) is not None:
                    return None  # reported when the checker reaches this node
                result: Any = left**right
            elif isinstance(node.op, ast.Mult):
                if (
                    isinstance(left, int)
                    and isinstance(right, int)
                    and left.bit_length() + right.bit_length() > 4 * MAX_POWER_BITS
                ):
                    return None
                result = left * right
            elif isinstance(node.op, ast.Add):
                result = left + right
            else:
                result = left - right
        except (ArithmeticError, ValueError):
            return None
        return result if isinstance(result, (int, float)) else None
    return None


def _nesting_depth(root: ast.AST) -> int:
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _syntax_problem(source: str, exc: SyntaxError) -> str:
    problem = exc.msg or "invalid syntax"
    line_number = exc.lineno or 1
    lines = source.splitlines() or [""]
    line = lines[min(line_number, len(lines)) - 1]
    column = exc.offset if exc.offset and exc.offset > 0 else None
    if line_number == 1 and column is not None:
        column += len(source) - len(source.lstrip())
    where = f"line {line_number}, " if len(lines) > 1 else ""
    if column is None:
        return f"{problem} ({where}at the end)" if where else f"{problem} (at the end)"
    near = line[column - 1 :].strip() if column <= len(line) else ""
    text = f"{problem} at {where}column {column}"
    return f"{text} (near {_quote(near)})" if near else f"{text} (at the end)"


def compile_expression(source: str, *, allowed_names: Iterable[str]) -> Expression:
    """Parse and statically check a condition; return an :class:`Expression` to evaluate.

    Raises :class:`~flowdbg.errors.ExpressionError` with a one-sentence explanation when the
    condition is empty, too long, not valid Python, or uses a name, attribute, function,
    method or syntax that is not allowed.
    """
    if not isinstance(source, str):
        raise ExpressionError(
            f"a condition must be a string, not {type(source).__name__}; write for example "
            f"{_EXAMPLE}"
        )
    allowed = frozenset(allowed_names)
    text = source.strip()
    if not text:
        raise ExpressionError(f"the condition is empty; write an expression such as {_EXAMPLE}")
    if len(source) > MAX_SOURCE_LENGTH:
        raise ExpressionError(
            f"condition {_quote(source)} is {len(source)} characters long, more than the limit "
            f"of {MAX_SOURCE_LENGTH}; shorten it"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(
            f"condition {_quote(source)} is not a valid expression: "
            f"{_syntax_problem(source, exc)}; write a single Python expression such as "
            f"{_EXAMPLE}"
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ExpressionError(
            f"condition {_quote(source)} cannot be parsed ({_describe_exception(exc)}); simplify it"
        ) from None
    if _nesting_depth(tree) > MAX_NESTING:
        raise ExpressionError(
            f"condition {_quote(source)} is nested more than {MAX_NESTING} levels deep; simplify it"
        )
    checker = _Checker(source, allowed)
    checker.check(tree.body, frozenset())
    return Expression(source, frozenset(checker.used), tree.body)


# ---------------------------------------------------------------------------------------------
# Log templates

_ATTRIBUTE = "."
_ITEM = "["
_FieldPart: TypeAlias = "tuple[str, str | int]"


@lru_cache(maxsize=1024)
def _split_field_name(field_name: str) -> tuple[str, tuple[_FieldPart, ...]]:
    """Split ``state[items][0].name`` into ``('state', (('[', 'items'), ('[', 0), ('.', ...)))``.

    An index is read as in paths (see :func:`_index`): ``[-1]`` is the last item,
    ``['user id']`` a quoted key. Raises ValueError for malformed field names.
    """
    end = len(field_name)
    position = min(
        (index for index in (field_name.find("."), field_name.find("[")) if index >= 0),
        default=end,
    )
    root = field_name[:position]
    parts: list[_FieldPart] = []
    while position < end:
        if field_name[position] == ".":
            start = position + 1
            position = start
            while position < end and field_name[position] not in ".[":
                position += 1
            attribute = field_name[start:position]
            if not attribute:
                raise ValueError("empty attribute name after '.'")
            parts.append((_ATTRIBUTE, attribute))
        else:
            close = field_name.find("]", position + 1)
            if close < 0:
                raise ValueError("missing ']'")
            key = field_name[position + 1 : close]
            if not key:
                raise ValueError("empty index '[]'")
            parts.append((_ITEM, _index(key)))
            position = close + 1
            if position < end and field_name[position] not in ".[":
                raise ValueError("only '.' or '[' may follow ']'")
    return root, tuple(parts)


def _index(key: str) -> str | int:
    """An index of a template field, read as paths are everywhere else: digits with an optional
    minus an int (``[-1]``, the last item), a quoted key its text (``['user id']``), any other
    key itself (``[messages]``, as ``str.format`` reads it)."""
    if key.isdecimal() or (key[:1] == "-" and key[1:].isdecimal()):
        return int(key)
    if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
        return key[1:-1]
    return key


def _template_error(template: str, problem: str, fix: str) -> ExpressionError:
    return ExpressionError(f"log template {_quote(template)} {problem}; {fix}")


def _template_roots(template: str) -> tuple[str, ...]:
    """Check a template's structure (everything but the names) and return its root names."""
    if not isinstance(template, str):
        raise ExpressionError(
            f"a log template must be a string, not {type(template).__name__}; write for "
            "example 'count is {state[count]}'"
        )
    return _checked_template_roots(template)


@lru_cache(maxsize=512)
def _checked_template_roots(template: str) -> tuple[str, ...]:
    if len(template) > MAX_SOURCE_LENGTH:
        raise _template_error(
            template,
            f"is {len(template)} characters long, more than the limit of {MAX_SOURCE_LENGTH}",
            "shorten it",
        )
    roots: list[str] = []
    _check_template_level(template, template, roots, depth=0)
    return tuple(roots)


def _check_template_level(template: str, text: str, roots: list[str], depth: int) -> None:
    try:
        pieces = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise _template_error(
            template,
            f"is malformed ({exc})",
            "write literal braces as '{{' and '}}' and close every field with '}'",
        ) from None
    for _literal, field_name, spec, conversion in pieces:
        if field_name is None:
            continue
        field = "{" + field_name + (f"!{conversion}" if conversion else "")
        field += (f":{spec}" if spec else "") + "}"
        try:
            root, parts = _split_field_name(field_name)
        except ValueError as exc:
            raise _template_error(
                template,
                f"has a malformed field {field!r} ({exc})",
                "write fields like {state[count]} or {output.items}",
            ) from None
        if not root or root.isdecimal():
            raise _template_error(
                template,
                f"uses the positional field {field!r}",
                "name the value instead, for example {state[count]} or {node}",
            )
        private = [root] if root.startswith("_") else []
        private += [str(key) for _, key in parts if isinstance(key, str) and key.startswith("_")]
        if private:
            raise _template_error(
                template,
                f"reads {private[0]!r} in field {field!r}",
                "names, attributes and keys starting with '_' are not allowed",
            )
        if conversion not in (None, "r", "s", "a"):
            raise _template_error(
                template,
                f"has an unknown conversion '!{conversion}' in field {field!r}",
                "use !r, !s or !a",
            )
        roots.append(root)
        if spec and ("{" in spec or "}" in spec):
            if depth > 0:
                raise _template_error(
                    template,
                    f"nests fields too deeply in {field!r}",
                    "a format spec may contain fields, but those may not contain more",
                )
            _check_template_level(template, spec, roots, depth + 1)
        elif spec:
            refusal = _spec_refusal(spec)
            if refusal is not None:
                raise _template_error(
                    template,
                    f"has a format spec that is too large in field {field!r} ({refusal})",
                    "use a smaller number",
                )


def check_template(template: str, *, allowed_names: Iterable[str]) -> None:
    """Check a logpoint template (``str.format`` syntax) when the logpoint is set.

    Raises :class:`~flowdbg.errors.ExpressionError` for malformed templates, positional fields
    (``{}``, ``{0}``), unknown root names, names/attributes/keys starting with ``_``, unknown
    conversions and format specs with a width or precision above the limit.
    """
    roots = _template_roots(template)
    allowed = frozenset(allowed_names)
    for root in roots:
        if root not in allowed:
            fix = f"available names: {_list_names(allowed)}"
            close = difflib.get_close_matches(root, allowed, n=1)
            if close:
                fix += f" (did you mean {close[0]!r}?)"
            raise ExpressionError(
                f"unknown name {root!r} in log template {_quote(template)}; {fix}"
            )


class _FieldFailure:
    """Stands for a field whose value could not be looked up or converted."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def marker(self) -> str:
        return f"<error: {_describe_exception(self.error)}>"


class _SafeFormatter(string.Formatter):
    """``str.format`` without private attributes, with capped specs and error markers."""

    def get_field(
        self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> tuple[Any, str]:
        root, parts = _split_field_name(field_name)
        try:
            if root.startswith("_"):
                raise AttributeError(f"{root!r} is private")
            value = kwargs[root]
            for kind, key in parts:
                if isinstance(key, str) and key.startswith("_"):
                    raise AttributeError(f"{key!r} is private")
                value = self._attribute(value, str(key)) if kind == _ATTRIBUTE else value[key]
                if isinstance(value, types.ModuleType):
                    raise TypeError("modules are not accessible in log templates")
        except Exception as exc:
            return _FieldFailure(exc), root
        return value, root

    @staticmethod
    def _attribute(value: Any, name: str) -> Any:
        try:
            return getattr(value, name)
        except AttributeError:
            if isinstance(value, Mapping) and name in value:
                return value[name]
            raise

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if isinstance(value, _FieldFailure) or conversion is None:
            return value
        try:
            return _format_value(value, conversion, "")
        except Exception as exc:
            return _FieldFailure(exc)

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, _FieldFailure):
            return value.marker()
        try:
            return _format_value(value, None, format_spec)
        except Exception as exc:
            return _FieldFailure(exc).marker()


_FORMATTER = _SafeFormatter()


def render_template(template: str, names: Mapping[str, Any]) -> str:
    """Render a logpoint template with *names*; failing fields become ``<error: ...>`` markers.

    A missing key or index, a failing attribute, a bad format spec or a value that cannot be
    converted never raises: that field renders as, e.g., ``<error: KeyError 'count'>``. A
    template that :func:`check_template` would reject for its structure (malformed, positional
    fields, private names, oversized specs) raises :class:`~flowdbg.errors.ExpressionError`.
    """
    _template_roots(template)
    try:
        return _FORMATTER.vformat(template, (), names)
    except Exception as exc:  # defensive: the structure was checked above
        return f"<error: {_describe_exception(exc)}>"
