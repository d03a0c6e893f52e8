"""Loading ``TARGET`` (``path/to/file.py:obj`` or ``package.module:obj``) for ``run`` and
``graph inspect``.

``obj`` names the object to debug; ``obj()`` (explicit call syntax) names a function to call
without arguments, whose result is debugged. A bare ``obj`` naming such a function is called
only where the caller allows it (``flowdbg run`` always has); elsewhere it is refused with a
message that says to add ``()``, so that looking at a target never runs code the user did not
ask to run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from flowdbg.errors import AdapterError, FlowdbgError

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger

__all__ = ["TargetError", "load_target"]


class TargetError(FlowdbgError):
    """The command-line target cannot be imported, found or debugged."""


def _describe_import_error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}, line {exc.lineno}" if exc.filename else f"line {exc.lineno}"
        return f"SyntaxError: {exc.msg} ({where})"
    # The innermost frame of the user's module is the most useful pointer.
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):
        if "importlib" not in frame.filename and "flowdbg" + os.sep + "cli" not in frame.filename:
            where = f" ({frame.filename}, line {frame.lineno})"
            break
    return f"{type(exc).__name__}: {exc}{where}"


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise TargetError(f"no file {str(path)!r}; give TARGET as path/to/file.py:obj")
    name = f"_flowdbg_target_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {str(path)!r}: it is not a Python file")
    module = importlib.util.module_from_spec(spec)
    # Like `python file.py`: the file's folder comes first on sys.path for its own imports.
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise TargetError(f"cannot import {str(path)!r}: {_describe_import_error(exc)}") from exc
    return module


def _import_module(name: str) -> ModuleType:
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise TargetError(
            f"{name!r} is neither a Python file nor a module name; give TARGET as "
            "path/to/file.py:obj or package.module:obj"
        )
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the current folder is importable
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise TargetError(
                f"no module named {name!r}; give TARGET as path/to/file.py:obj or "
                "package.module:obj (importable from the current folder)"
            ) from exc
        raise TargetError(f"cannot import {name!r}: {_describe_import_error(exc)}") from exc
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise TargetError(f"cannot import {name!r}: {_describe_import_error(exc)}") from exc


def _split(spec: str) -> tuple[str, str | None]:
    # A Windows drive letter ("C:\\x.py") is not an object separator.
    head, sep, tail = spec.rpartition(":")
    if not sep or not tail or "/" in tail or "\\" in tail or (len(head) == 1 and head.isalpha()):
        return spec, None
    return head, tail


def _accepts(dbg: Debugger, obj: Any) -> bool:
    try:
        dbg.adapter_for(obj)
    except AdapterError:
        return False
    return True


def load_target(spec: str, dbg: Debugger, *, implicit_call: bool = True) -> Any:
    """Import ``spec`` and return the object to debug.

    ``obj`` may be a dotted attribute path. ``obj()`` calls it without arguments and returns
    what it returns (a factory such as ``build_graph()``). Without ``:obj`` the module must
    hold exactly one object an adapter accepts.

    :param spec: ``path/to/file.py:obj``, ``path/to/file.py:obj()``, ``package.module:obj``
        or ``package.module:obj()``.
    :param dbg: the debugger whose adapters decide what is debuggable.
    :param implicit_call: when a bare ``obj`` names a callable no adapter accepts, call it as
        if written ``obj()`` (``True``, the form ``flowdbg run`` has always taken) or refuse it
        with a message that says to add ``()`` (``False``).
    :raises TargetError: when the module does not import, the object is missing, is a
        function not called, or no adapter accepts it (the message says which, and what is
        available).
    """
    where, attr = _split(spec)
    call = False
    if attr is not None and "(" in attr:
        name, _, args = attr.partition("(")
        if args != ")" or not name:
            raise TargetError(
                f"{spec!r} passes arguments, which TARGET cannot; write {where}:FUNCTION() to "
                "call a function that takes none (build the object in such a function)"
            )
        attr, call = name, True
    is_file = where.endswith(".py") or os.sep in where or "/" in where
    module = _import_file(Path(where)) if is_file else _import_module(where)
    label = where
    if attr is None:
        found = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_") and _accepts(dbg, value)
        ]
        if len(found) != 1:
            listing = ", ".join(sorted(found)) or "none"
            raise TargetError(
                f"{label!r} holds {len(found)} debuggable objects ({listing}); name one: "
                f"{label}:NAME"
            )
        attr = found[0]
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            public = sorted(
                n
                for n, v in vars(module).items()
                if not n.startswith("_") and not isinstance(v, ModuleType)
            )
            shown = ", ".join(public[:30]) + (", ..." if len(public) > 30 else "")
            raise TargetError(
                f"{label!r} has no attribute {attr!r}; it defines: {shown or 'nothing'}"
            ) from None
    if call:
        if not callable(obj):
            raise TargetError(
                f"{label}:{attr} is an object of type {type(obj).__name__!r}, which cannot be "
                f"called; write {label}:{attr} without ()"
            )
        obj, attr = _call(obj, label, attr, explicit=True), f"{attr}()"
    elif not _accepts(dbg, obj) and callable(obj) and not isinstance(obj, type):
        if not implicit_call:
            raise TargetError(
                f"{label}:{attr} is a function, not a graph, workflow or agent; to look at what "
                f"it builds, call it: '{label}:{attr}()' (quoted for the shell)"
            )
        obj, attr = _call(obj, label, attr, explicit=False), f"{attr}()"
    if not _accepts(dbg, obj):
        try:
            dbg.adapter_for(obj)
        except AdapterError as exc:
            raise TargetError(f"{label}:{attr} is not supported: {exc}") from exc
    return obj


def _call(factory: Any, label: str, attr: str, *, explicit: bool) -> Any:
    """``factory()``, its failure a :class:`TargetError` naming it."""
    try:
        return factory()
    except TypeError as exc:
        what = (
            f"calling {label}:{attr}() without arguments failed"
            if explicit
            else f"{label}:{attr} is a callable no adapter accepts, and calling it without "
            "arguments failed"
        )
        raise TargetError(
            f"{what}: {exc}; point TARGET at a compiled graph, workflow or agent, or at a "
            "function taking no arguments"
        ) from exc
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise TargetError(
            f"calling the factory {label}:{attr}() failed: {_describe_import_error(exc)}"
        ) from exc
