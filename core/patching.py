"""Instrumenting a library from outside: patches that are shared, counted and undone exactly.

An adapter that cannot hook a target object (a framework whose runs start from a static method,
``Runner.run(agent, ...)``) replaces attributes of the framework's classes or modules instead.
Several debuggers, and several targets of one debugger, may need the same patch: :func:`patch`
applies it once and counts who holds it; :func:`unpatch` lets go of one hold, and the last one
puts the original back exactly as it was (the owner's own attribute, or none at all, so that an
inherited one shows through again).

Every adapter's attach, detach, install and uninstall runs under :data:`LOCK`, one lock for the
process: the registries adapters keep are the process's too, and two debuggers attaching at once
must see each other's changes.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["LOCK", "Patch", "patch", "patched", "unpatch"]

log = logging.getLogger("flowdbg.patching")

#: held while any adapter changes the objects of a framework (reentrant: attaching a graph
#: attaches its subgraphs)
LOCK = threading.RLock()

_MISSING: Any = object()


class Patch:
    """One attribute replaced by flowdbg, and what to put back."""

    __slots__ = ("name", "original", "own", "owner", "refs", "replacement")

    def __init__(self, owner: Any, name: str, original: Any, own: bool, replacement: Any) -> None:
        #: the class or module patched
        self.owner = owner
        #: the attribute's name
        self.name = name
        #: the attribute as it was found (as stored: a staticmethod stays one)
        self.original = original
        #: whether the owner had the attribute itself (else it was inherited, or absent)
        self.own = own
        #: what flowdbg stored instead
        self.replacement = replacement
        #: how many holders share the patch
        self.refs = 1

    def __repr__(self) -> str:
        owner = getattr(self.owner, "__qualname__", None) or getattr(self.owner, "__name__", "?")
        return f"<flowdbg patch {owner}.{self.name} x{self.refs}>"


_PATCHES: dict[tuple[int, str], Patch] = {}


def patched(owner: Any, name: str) -> Patch | None:
    """The patch flowdbg holds on ``owner.name``, if any."""
    return _PATCHES.get((id(owner), name))


def patch(owner: Any, name: str, make: Callable[[Any], Any]) -> Patch:
    """Replace ``owner.name`` by ``make(original)``, or share the patch already there.

    :param owner: the class or module.
    :param name: the attribute.
    :param make: builds the replacement from the original as stored (``inspect.getattr_static``:
        a ``staticmethod`` or ``classmethod`` object stays one; wrap its ``__func__``). Called
        only for the first holder.
    :returns: the patch; give it to :func:`unpatch` when done.
    :raises AttributeError: when ``owner`` has no attribute ``name``.
    """
    with LOCK:
        key = (id(owner), name)
        held = _PATCHES.get(key)
        if held is not None:
            held.refs += 1
            return held
        own = name in getattr(owner, "__dict__", {})
        original = inspect.getattr_static(owner, name)  # AttributeError names what is missing
        replacement = make(original)
        setattr(owner, name, replacement)
        held = _PATCHES[key] = Patch(owner, name, original, own, replacement)
        return held


def unpatch(held: Patch) -> None:
    """Let go of one hold on ``held``; the last restores the original exactly.

    When something else has replaced the attribute since (a user's own patch over flowdbg's),
    it is left as it is, with a warning: putting the original back would undo that one too.
    """
    with LOCK:
        if held.refs <= 0:
            return
        held.refs -= 1
        if held.refs:
            return
        _PATCHES.pop((id(held.owner), held.name), None)
        current = inspect.getattr_static(held.owner, held.name, _MISSING)
        if current is not held.replacement:
            log.warning(
                "%s.%s was replaced after flowdbg patched it; flowdbg leaves it as it is",
                getattr(held.owner, "__qualname__", held.owner),
                held.name,
            )
            return
        if held.own:
            setattr(held.owner, held.name, held.original)
        else:
            delattr(held.owner, held.name)
