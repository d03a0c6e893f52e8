"""Secrets kept out of everything flowdbg writes: the store, logpoint messages, ``--json``
output, the terminal and :meth:`Stop.to_dict <flowdbg.Stop.to_dict>`.

One :class:`Redactor` holds the rules; :func:`redact` (plain values) and :func:`redact_text`
(strings) apply them, and the store's encoder calls the same methods while it walks a value.

**By key.** A value is replaced whole by ``"[REDACTED]"`` when

- it sits under a mapping key matching a key pattern (:data:`DEFAULT_REDACT`: ``api_key``,
  ``token``, ``secret``, ``password``, ``authorization``, ... searched case-insensitively
  anywhere in the key; token *counts* such as ``max_tokens`` and ``total_tokens`` are kept);
- it is the ``"value"`` of a name/value record whose ``"name"``, ``"key"`` or ``"header"`` is
  such a name: ``{"name": "Authorization", "value": "Bearer ..."}``;
- it is the second item of a pair (a two-item list or tuple) whose first item is such a name:
  ``("API_KEY", "...")``, ``["Authorization", "Bearer ..."]``.

**By value.** Inside any string, known secret shapes are replaced and the rest stays
readable (``postgres://u:[REDACTED]@h/db``, ``Bearer [REDACTED]``, ``ghp_[REDACTED]``): see
:data:`TEXT_RULES`, each with where its shape comes from.

The token formats are written here rather than taken from a secret-scanning package: the
scanners on PyPI are built to scan files line by line with all their plugins (about a
millisecond a line, plus ``requests`` and ``pyyaml`` as dependencies), and the recorder
redacts every string of every step on its writer thread. One combined regular expression,
run only on strings that hold one of a few marker substrings, costs a fraction of a
microsecond for most strings; results for long strings are cached, since a state's messages
come back at every step.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "DEFAULT_REDACT",
    "NAMED_SECRET",
    "REDACTED",
    "TEXT_RULES",
    "Redactor",
    "TextRule",
    "compile_redact",
    "redact",
    "redact_text",
    "redactor",
]

#: Key patterns whose values are not stored (case-insensitive regular expressions, searched
#: anywhere in the key). ``token`` leaves token *counts* alone: ``max_tokens``, ``total_tokens``,
#: ``token_count``, ``token_usage``, ``token_limit`` (a LlamaIndex memory's), ``token_budget``
#: and ``tokenizer`` are kept.
DEFAULT_REDACT: tuple[str, ...] = (
    r"api[-_]?key",
    r"token(?!s|_?count|_?usage|_?limit|_?budget|izer)",
    r"secret",
    r"passw(?:or)?d",
    r"authorization",
    r"cookie",
    r"private[-_]?key",
    r"access[-_]?key",
    r"credential",
)

#: what a redacted value (or part of a string) is replaced with
REDACTED = "[REDACTED]"


class TextRule(NamedTuple):
    """One secret shape found inside strings."""

    name: str
    """What it finds."""
    pattern: str
    """A regular expression whose group ``secret`` is the part replaced. Each starts with one
    fixed character, the rarest of its shape, and checks what comes before it with a
    lookbehind: then one scan of a string for all rules at once costs a few nanoseconds a
    character (a rule starting with a word or a lookbehind would be tried at every position)."""
    source: str
    """Where the shape is specified."""


#: The shapes :func:`redact_text` replaces inside strings, besides secrets named before a
#: ``:`` or ``=`` (see :data:`NAMED_SECRET`). Token formats need a digit where a word could
#: otherwise match (``sk-learn-compatible-estimators`` is no key): random tokens of that
#: length hold one with near certainty. The vendor prefix is kept (``ghp_[REDACTED]``), as it
#: tells which credential it was and is no secret.
TEXT_RULES: tuple[TextRule, ...] = (
    TextRule(
        "password in a URL",
        # user:password@ after the scheme (up to the last "@" before the host, as a password
        # may hold one)
        r"://[^\s:/?#@\"'<>]*:(?P<secret>[^\s/?#\"'<>]+)(?=@)",
        "RFC 3986 section 3.2.1 (userinfo)",
    ),
    TextRule(
        "Slack webhook",
        r":(?<=https:)//hooks\.slack\.com/services/(?P<secret>[\w/]+)",
        "Slack incoming webhooks",
    ),
    TextRule(
        "bearer token",
        r"r(?<=[Bb]earer)[ \t]+(?P<secret>(?=[\w\-.~+/]*\d)[\w\-.~+/]{12,}=*)",
        "RFC 6750 section 2.1 (b64token)",
    ),
    TextRule(
        "OpenAI or Anthropic API key",
        r"-(?<=\bsk-)(?P<secret>(?=[\w\-]*\d)[\w\-]{20,})",
        "OpenAI API keys (sk-, sk-proj-), Anthropic API keys (sk-ant-api03-)",
    ),
    TextRule(
        "Stripe secret key",
        r"_(?<=\b[rs]k_live_|\b[rs]k_test_)(?P<secret>[0-9A-Za-z]{16,})",
        "Stripe API keys (sk_live_, rk_live_, sk_test_)",
    ),
    TextRule(
        "GitHub token",
        r"_(?:(?<=\bgh[pousr]_)|(?<=\bgithub_pat_))(?P<secret>[A-Za-z0-9_]{30,})",
        "GitHub token formats (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
    ),
    TextRule(
        "GitLab token",
        r"-(?:(?<=\bglpat-)|(?<=\bgldt-)|(?<=\bglrt-)|(?<=\bglft-)|(?<=\bglcbt-))"
        r"(?P<secret>[\w\-]{20,})",
        "GitLab token overview (glpat-, gldt-, glrt-, glft-, glcbt-)",
    ),
    TextRule(
        "AWS access key id",
        r"A(?<=\bAKIA|\bASIA|\bABIA|\bACCA)(?P<secret>[A-Z0-9]{16})\b",
        "AWS IAM unique identifier prefixes",
    ),
    TextRule(
        "Slack token",
        r"-(?<=\bxox[abeoprs]-)(?P<secret>[A-Za-z0-9\-]{10,})",
        "Slack token types (xoxb-, xoxp-, xoxa-, xoxe-, ...)",
    ),
    TextRule(
        "Google API key",
        r"z(?<=\bAIz)a(?P<secret>[\w\-]{35})",
        "Google Cloud API keys (AIza)",
    ),
    TextRule(
        "Hugging Face, npm or PyPI token",
        r"[_\-](?:(?<=\bhf_)|(?<=\bnpm_)|(?<=\bpypi-))(?P<secret>[\w\-]{30,})",
        "Hugging Face user access tokens (hf_), npm access tokens (npm_), PyPI API tokens",
    ),
    TextRule(
        "SendGrid key",
        r"\.(?<=\bSG\.)(?P<secret>[\w\-]{20,}\.[\w\-]{20,})",
        "SendGrid API keys (SG.)",
    ),
    TextRule(
        "JSON Web Token",
        # a JOSE header and a JSON payload both start with '{"', which base64url makes "eyJ"
        r"J(?<=\beyJ)(?P<secret>[\w\-]{8,}\.eyJ[\w\-]{8,}\.[\w\-]*)",
        "RFC 7519 (JWT), RFC 7515 (compact serialization)",
    ),
    TextRule(
        "private key block",
        # an unterminated block (cut text) is redacted to its end
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----\r?\n?(?P<secret>[\s\S]*?)"
        r"(?=\r?\n?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        "RFC 7468 (PEM textual encoding), OpenSSH and OpenPGP key files",
    ),
)

#: A secret named before a ``:`` or ``=``: ``api_key=...`` (query strings, environment
#: assignments, keyword arguments in reprs), ``"password": "..."`` (JSON text, dict reprs),
#: ``Authorization: Bearer ...`` (header lines). The name is read back from the separator and
#: must be a secret key under the key patterns (so ``max_tokens=100`` stays); after ``:``, a
#: quoted name needs a quoted value, and an unquoted one must look like a header or an
#: identifier (``X-Api-Key:``, ``client_secret:``) or be one of :data:`_COLON_NAMES`, so that
#: prose such as "token: the unit of text" is left alone. An authentication scheme before the
#: value is kept.
NAMED_SECRET = TextRule(
    "secret name, then : or =",
    r"[:=](?!//)(?P<gap>[ \t]*(?:(?:Bearer|Basic|Token|Digest|Bot|ApiKey|Negotiate)[ \t]+)?)"
    r"(?:(?P<quote>[\"'])(?P<quoted>(?:\\.|(?!(?P=quote))[^\\\n])*)(?P=quote)"
    r"|(?P<secret>[^\s\"',;&)}\]]+))",
    "RFC 9110 section 11.6.2 (Authorization); RFC 3986 query strings; JSON (RFC 8259)",
)
_COLON_NAMES = frozenset({"authorization", "password", "passwd", "passphrase", "cookie"})
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_NAME_MAX = 64
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _numbered(pattern: str, index: int) -> str:
    """``pattern`` with its group names suffixed by ``index``, so that rules can be joined."""
    pattern = re.sub(r"\(\?P<(\w+)>", lambda m: f"(?P<{m[1]}{index}>", pattern)
    return re.sub(r"\(\?P=(\w+)\)", lambda m: f"(?P={m[1]}{index})", pattern)


def _alternatives() -> tuple[list[str], frozenset[int]]:
    """The rules as alternatives of one expression, each starting with a plain character (which
    lets the regular expression engine skip the positions where no rule can start), and the
    indices of the named-secret ones."""
    patterns: list[str] = []
    named: set[int] = set()
    for rule in (*TEXT_RULES[:2], NAMED_SECRET, *TEXT_RULES[2:]):  # URL rules first: all at ":"
        if rule is NAMED_SECRET:
            for separator in ":=":
                named.add(len(patterns))
                patterns.append(separator + rule.pattern.removeprefix("[:=]"))
        elif rule.pattern.startswith("[_\\-]"):
            patterns.append("_" + rule.pattern[len("[_\\-]") :])
            patterns.append("-" + rule.pattern[len("[_\\-]") :])
        else:
            patterns.append(rule.pattern)
    return [_numbered(p, index) for index, p in enumerate(patterns)], frozenset(named)


_ALTERNATIVES, _NAMED = _alternatives()
#: every rule in one expression: one scan of a string finds every match
_TEXT = re.compile("|".join(_ALTERNATIVES))
#: strings shorter than this hold no rule's match ("a=bcdefgh" is the shortest)
_MIN_TEXT = 8
#: strings at least this long have their result cached (shorter ones are cheap to scan)
_CACHE_MIN = 24
_CACHE_MAX_LEN = 1 << 16
_CACHE_ENTRIES = 1024
#: long strings whose redaction is remembered by identity (see Redactor.text)
_LONG_ENTRIES = 64
#: a name/value record's or pair's name must look like a key or header name
_NAME_LIKE = re.compile(r"[\w.\-]{1,64}")


def _name_before(text: str, end: int) -> tuple[str, bool]:
    """The name that ends before the separator at ``end`` (spaces and a closing quote
    skipped), and whether it was quoted."""
    at = end
    while at > 0 and text[at - 1] in " \t":
        at -= 1
    quoted = at > 0 and text[at - 1] in "\"'"
    if quoted:
        at -= 1
    start = at
    while start > 0 and at - start < _NAME_MAX and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:at], quoted


@functools.lru_cache(maxsize=32)
def _compile(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    parts: list[str] = []
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error:
            pattern = re.escape(pattern)  # not a regular expression: a plain substring
        parts.append(f"(?:{pattern})")
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def compile_redact(redact: Sequence[str] | re.Pattern[str] | None) -> re.Pattern[str] | None:
    """One case-insensitive regular expression matching any of ``redact``.

    :param redact: key patterns (regular expressions; a pattern that is not a valid regular
        expression is matched as a plain substring), a compiled pattern, or ``None``.
    :returns: the pattern, or ``None`` when nothing is redacted.
    """
    if redact is None or isinstance(redact, re.Pattern):
        return redact
    if isinstance(redact, str):
        redact = (redact,)
    return _compile(tuple(redact))


class Redactor:
    """The redaction rules for one set of key patterns (see the module's docstring).

    A redactor may be shared between threads: its caches are plain dicts, filled and cleared
    whole.

    :param keys: the compiled key patterns (:func:`compile_redact`).
    """

    __slots__ = ("_cache", "_long", "_names", "key_cache", "keys")

    def __init__(self, keys: re.Pattern[str]) -> None:
        self.keys = keys
        self._names: dict[str, bool] = {}
        #: key -> what :meth:`key` returned (read directly by the store's encoder, whose
        #: mappings repeat the same few keys at every step)
        self.key_cache: dict[str, tuple[str, bool]] = {}
        self._cache: dict[str, str] = {}
        # (id, length, hash) of a long string -> its redacted form, None when it is unchanged:
        # a long value that stays in the state (a document, an image's base64) is scanned once,
        # not at every step. A string is immutable, so its id, length and (cached) hash name its
        # content while it lives; no reference to it is kept.
        self._long: dict[tuple[int, int, int], str | None] = {}

    # -- by key --

    def is_secret_key(self, name: str) -> bool:
        """Whether the value under the mapping key ``name`` is redacted."""
        found = self._names.get(name)
        if found is None:
            found = self.keys.search(name) is not None
            if len(self._names) >= 10_000:
                self._names = {}
            self._names[name] = found
        return found

    def key(self, key: str) -> tuple[str, bool]:
        """A mapping key as written (its own secret parts redacted, as a string's) and whether
        the value under it is redacted.

        :param key: the key.
        """
        found = self.key_cache.get(key)
        if found is None:
            found = (self.text(key), self.is_secret_key(key))
            if len(self.key_cache) >= 10_000:
                self.key_cache = {}
            self.key_cache[key] = found
        return found

    def is_secret_name(self, name: Any) -> bool:
        """Whether ``name``, the name of a name/value record or the first item of a pair, names
        a secret: a key or header name (no spaces) that :meth:`is_secret_key` redacts."""
        return (
            type(name) is str
            and self.is_secret_key(name)
            and _NAME_LIKE.fullmatch(name) is not None
        )

    def record_secret(self, value: Mapping[Any, Any]) -> bool:
        """Whether ``value`` is a name/value record of a secret: its ``"value"`` is redacted.

        :param value: a mapping.
        """
        if "value" not in value:
            return False
        for field in ("name", "key", "header"):
            if field in value and self.is_secret_name(value[field]):
                return True
        return False

    def pair_secret(self, value: Sequence[Any]) -> bool:
        """Whether ``value`` is a pair of a secret's name and its value (the second item is
        redacted): a two-item list or tuple whose first item is a secret name and whose second
        is a string or a number.

        :param value: a list or tuple.
        """
        return (
            len(value) == 2
            and isinstance(value[1], str | int | float | bytes)
            and not isinstance(value[1], bool)
            and self.is_secret_name(value[0])
        )

    # -- by value --

    def text(self, text: str) -> str:
        """``text`` with the secret parts of known shapes replaced by ``"[REDACTED]"``.

        :param text: any string.
        :returns: the string itself when nothing in it is a secret, else a new string.
        """
        size = len(text)
        if size < _MIN_TEXT:
            return text
        if size > _CACHE_MAX_LEN and type(text) is str:
            ident = (id(text), size, hash(text))
            long = self._long
            if ident in long:
                found_long = long[ident]
                return text if found_long is None else found_long
            scanned = self._scan(text)
            if len(long) >= _LONG_ENTRIES:
                self._long = long = {}
            long[ident] = None if scanned is text else scanned
            return scanned
        if size < _CACHE_MIN:
            return self._scan(text)
        cache = self._cache
        found = cache.get(text)
        if found is None:
            found = self._scan(text)
            if len(cache) >= _CACHE_ENTRIES:
                self._cache = cache = {}
            cache[text] = found
        return found

    def _scan(self, text: str) -> str:
        match = _TEXT.search(text)
        if match is None:
            return text
        pieces: list[str] = []
        done = 0  # text before this is in pieces
        while match is not None:
            # The last group of the rule that matched closes last: its name ends with the index.
            index = int((match.lastgroup or "").lstrip(_LETTERS))
            if index in _NAMED:
                span = self._named(match, index)
                if span is None:
                    # Not a secret's name ("note: ...", max_tokens=...): what follows the
                    # separator is searched like the rest.
                    match = _TEXT.search(text, match.start() + 1)
                    continue
            else:
                span = match.span(f"secret{index}")
            pieces.append(text[done : span[0]])
            pieces.append(REDACTED)
            done = span[1]
            match = _TEXT.search(text, max(match.end(), done))
        if not pieces:
            return text
        pieces.append(text[done:])
        return "".join(pieces)

    def _named(self, match: re.Match[str], index: int) -> tuple[int, int] | None:
        """The span of the value a named-secret match redacts, ``None`` if it is no secret."""
        text = match.string
        quoted = match.group(f"quoted{index}") is not None
        start, end = match.span(f"quoted{index}" if quoted else f"secret{index}")
        if text.startswith(REDACTED, start) or (start == end):
            return None  # redacted already (a value redacted by key, shown in a repr)
        name, name_quoted = _name_before(text, match.start())
        if not name or not self.is_secret_key(name):
            return None
        if match.group(0)[0] == ":":
            if name_quoted:
                if not quoted:
                    return None
            elif not (name.lower() in _COLON_NAMES or "_" in name or "-" in name):
                return None
        return start, end

    # -- plain values --

    def redact(self, value: Any) -> Any:
        """A plain value with its secrets redacted, by key and by value.

        Dicts (and other mappings), lists, tuples, sets and strings are walked; containers in
        which nothing is redacted are returned as they are (the same object), others are copied
        (a mapping as a dict). Other values are returned as they are.

        :param value: a plain value (what :func:`~flowdbg._values.to_plain` or the store gives),
            or a live one whose containers are to be redacted.
        :returns: the redacted value.
        """
        return self._walk(value, 0, set())

    def _walk(self, value: Any, depth: int, active: set[int]) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is int or kind is float or kind is bool or value is None or depth > 200:
            return value
        if isinstance(value, str):
            return self.text(str.__str__(value))
        if isinstance(value, Mapping):
            if id(value) in active:
                return value
            active.add(id(value))
            try:
                return self._mapping(value, depth, active)
            finally:
                active.discard(id(value))
        if kind is list or kind is tuple or kind is set or kind is frozenset:
            if id(value) in active:
                return value
            active.add(id(value))
            try:
                return self._items(value, kind, depth, active)
            finally:
                active.discard(id(value))
        return value

    def _mapping(self, value: Mapping[Any, Any], depth: int, active: set[int]) -> Any:
        record = self.record_secret(value)
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            name = self.text(key) if type(key) is str else key
            if item is not None and (
                (record and key == "value") or (type(key) is str and self.is_secret_key(key))
            ):
                new = REDACTED
            else:
                new = self._walk(item, depth + 1, active)
            changed = changed or new is not item or name is not key
            out[name] = new
        return out if changed else value

    def _items(self, value: Any, kind: type, depth: int, active: set[int]) -> Any:
        if kind is not list and kind is not tuple:  # a set
            items = [self._walk(item, depth + 1, active) for item in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            try:
                return kind(items)
            except TypeError:  # an unhashable redacted item: a list shows it as well
                return items
        if self.pair_secret(value):
            return kind((value[0], REDACTED))
        items = [self._walk(item, depth + 1, active) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return kind(items)


@functools.lru_cache(maxsize=32)
def _redactor(keys: re.Pattern[str]) -> Redactor:
    return Redactor(keys)


def redactor(redact: Sequence[str] | re.Pattern[str] | None = DEFAULT_REDACT) -> Redactor | None:
    """The (shared) :class:`Redactor` for key patterns ``redact``.

    :param redact: key patterns (see :func:`compile_redact`); ``None`` or ``()`` turns every
        rule off, by key and by value.
    :returns: the redactor, or ``None`` when nothing is redacted.
    """
    keys = compile_redact(redact)
    return None if keys is None else _redactor(keys)


def redact(value: Any, redact: Sequence[str] | re.Pattern[str] | None = DEFAULT_REDACT) -> Any:
    """``value`` with its secrets replaced by ``"[REDACTED]"``, by key and by value (see the
    module's docstring); see :meth:`Redactor.redact`.

    :param value: a plain value (dicts, lists, tuples, sets, strings, scalars).
    :param redact: key patterns; ``None`` or ``()`` to keep everything.
    :returns: the redacted value (``value`` itself when nothing was redacted).
    """
    rules = redactor(redact)
    return value if rules is None else rules.redact(value)


def redact_text(text: str, redact: Sequence[str] | re.Pattern[str] | None = DEFAULT_REDACT) -> str:
    """``text`` with the secret parts of known shapes (:data:`TEXT_RULES`) replaced by
    ``"[REDACTED]"``, the rest kept: ``postgres://u:[REDACTED]@h/db``.

    :param text: any string.
    :param redact: key patterns, which decide whether a ``name=value`` or ``"name": "value"``
        in the text is a secret's; ``None`` or ``()`` to keep everything.
    :returns: the text (the same object when nothing was redacted).
    """
    rules = redactor(redact)
    return text if rules is None else rules.text(text)
