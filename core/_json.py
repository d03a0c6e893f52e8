"""Values as strict JSON: what every ``to_dict`` and every ``--json`` output holds.

One policy, for every value flowdbg hands to a JSON consumer (``Event.to_dict``,
``RunLog.to_dict``, ``Stop.to_dict``, the CLI's ``--json`` envelopes):

- values are first made plain by :func:`flowdbg._values.to_plain` (models, dataclasses, messages,
  enums, dates, sets...), as the debugger shows them;
- ``None``, ``bool``, ``int`` and finite ``float`` stay numbers (subclasses such as an
  ``IntEnum`` member become the base type);
- ``NaN``, ``inf`` and ``-inf`` become the strings ``"NaN"``, ``"Infinity"`` and
  ``"-Infinity"``: JSON has no such numbers (``json.dumps`` would write the bare tokens, which
  ``jq``, JavaScript's ``JSON.parse`` and other strict parsers refuse), and ``null`` would hide
  the very value a user is debugging. The strings are the tokens ``float()`` and JavaScript read
  back;
- strings keep every character UTF-8 can hold; a lone surrogate (left by decoding bytes with
  ``surrogateescape``, as Python does for file names) becomes its escape as text (``\\udc80``),
  since no UTF-8 output can carry it;
- mapping keys that are not strings become text: an enum its value's, anything else ``str(key)``
  (``{1: "a"}`` gives ``{"1": "a"}``; two keys with the same text keep the later value);
- lists and tuples become lists; anything else its ``repr``;
- secrets become ``"[REDACTED]"``, by key and by value (:mod:`flowdbg._redact`, the rules the
  store applies): a JSON consumer (a log shipper, a CI artifact) must not receive what the
  recording would not keep.

The result is a tree of dict, list, str, int, float, bool and None that ``json.dumps(...,
allow_nan=False)`` accepts and writes as UTF-8.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any

from flowdbg._redact import redact
from flowdbg._values import to_plain

__all__ = ["jsonable", "strict_json"]

_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def jsonable(value: Any) -> Any:
    """``value`` as strict JSON data (see the module's docstring for the policy).

    :param value: any value: a state, an input, an output, a routing decision...
    :returns: dicts with str keys, lists, str, int, finite float, bool and None.
    """
    return strict_json(to_plain(value))


def strict_json(value: Any) -> Any:
    """A value that is already plain (dicts, lists, scalars) as strict JSON data; the second half
    of :func:`jsonable`, for data built of plain values (``to_dict`` results) that needs no
    :func:`~flowdbg._values.to_plain` pass.

    :param value: plain data.
    :returns: the same data under the module's policy.
    """
    return _strict(redact(value))


def _strict(value: Any) -> Any:
    # Exact types first: the common case, and never an enum member. Among subclasses, Enum
    # before str/int/float (a member of a str- or int-mixin enum is both) and bool before int.
    if value is None:
        return None
    kind = type(value)
    if kind is str:
        return _text(value)
    if kind is dict:
        return {_key(k): _strict(v) for k, v in value.items()}
    if kind is int or kind is bool:
        return value
    if kind is float:
        return value if math.isfinite(value) else _NON_FINITE[repr(value)]
    if kind is list or kind is tuple:
        return [_strict(v) for v in value]
    if isinstance(value, Enum):
        return _strict(value.value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _strict(float(value))
    if isinstance(value, str):
        return _text(str.__str__(value))
    if isinstance(value, dict):
        return {_key(k): _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return _text(redact(repr(value)))  # a repr shows fields: Client(api_key='...')


def _key(key: Any) -> str:
    if type(key) is str:
        return _text(key)
    if isinstance(key, Enum):
        return _key(key.value)
    return _text(str(key))


def _text(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # only lone surrogates fail: keep them visible as their escape
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
