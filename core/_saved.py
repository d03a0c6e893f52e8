"""Breakpoints saved to a JSON file (:meth:`flowdbg.Debugger.save_breakpoints` and
:meth:`~flowdbg.Debugger.load_breakpoints`), which the terminal debugger keeps per target.

A file is ``{"flowdbg_breakpoints": 1, "breakpoints": [...]}``, or, keyed (the terminal debugger
keys by target, ``app.py:graph``), ``{"flowdbg_breakpoints": 1, "targets": {KEY: [...]}}``; a file
may hold both. Each breakpoint is a dict of what defines it (:data:`FIELDS`); its id and hit count
are not saved, so a restored breakpoint starts afresh.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowdbg.errors import BreakpointError

if TYPE_CHECKING:
    from flowdbg.breakpoints import Breakpoint

__all__ = ["FIELDS", "VERSION", "data_of", "read", "same", "write"]

#: the version of the file's shape
VERSION = 1
_MARK = "flowdbg_breakpoints"

#: what a saved breakpoint holds, as the arguments of ``Breakpoint.create`` (and ``type``)
FIELDS = (
    "type",
    "pattern",
    "positions",
    "kinds",
    "condition",
    "hit_condition",
    "message",
    "temporary",
    "enabled",
    "exception_types",
    "watch_path",
    "args_pattern",
)


def data_of(bp: Breakpoint) -> dict[str, Any]:
    """What defines ``bp``, as JSON data (no id, no hit count)."""
    data = bp.model_dump(mode="json", include=set(FIELDS))
    return {name: data[name] for name in FIELDS}


def same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two saved breakpoints define the same breakpoint."""
    return all(_plain(a.get(name)) == _plain(b.get(name)) for name in FIELDS)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BreakpointError(
            f"no saved breakpoints at {str(path)!r}; save some there first "
            "(Debugger.save_breakpoints)"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BreakpointError(
            f"{str(path)!r} is not a breakpoints file (not JSON: {exc.msg} at line {exc.lineno}); "
            "delete it or save breakpoints to it again"
        ) from exc
    if not isinstance(data, dict) or data.get(_MARK) != VERSION:
        raise BreakpointError(
            f"{str(path)!r} is not a breakpoints file of this flowdbg (no "
            f'"{_MARK}": {VERSION}); delete it or save breakpoints to it again'
        )
    return data


def _items(value: Any, path: Path, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise BreakpointError(
            f"{where} of {str(path)!r} is not a list of breakpoints; delete it or save "
            "breakpoints to it again"
        )
    return [dict(item) for item in value]


def read(path: str | os.PathLike[str], key: str | None = None) -> list[dict[str, Any]]:
    """The breakpoints saved in ``path`` (under ``key``, if given: none when it has no entry).

    :raises BreakpointError: when the file is missing or is not a breakpoints file.
    """
    file = Path(path)
    data = _load(file)
    if key is None:
        return _items(data.get("breakpoints"), file, '"breakpoints"')
    targets = data.get("targets") or {}
    if not isinstance(targets, dict):
        raise BreakpointError(
            f'"targets" of {str(file)!r} is not an object; delete it or save breakpoints to it '
            "again"
        )
    return _items(targets.get(key), file, f"the entry {key!r}")


def write(
    path: str | os.PathLike[str], items: list[dict[str, Any]], key: str | None = None
) -> None:
    """Save ``items`` to ``path`` (under ``key``, keeping the file's other entries; an empty
    list removes the entry). The file is replaced at once, never left half written."""
    file = Path(path)
    data: dict[str, Any] = {_MARK: VERSION}
    if key is not None and file.exists():
        try:
            data = _load(file)
        except BreakpointError:  # an unreadable file is replaced by a good one
            data = {_MARK: VERSION}
    if key is None:
        data["breakpoints"] = items
    else:
        targets = data.get("targets")
        targets = dict(targets) if isinstance(targets, dict) else {}
        if items:
            targets[key] = items
        else:
            targets.pop(key, None)
        data["targets"] = dict(sorted(targets.items()))
    file.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=".breakpoints-", suffix=".tmp", dir=file.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
