"""Target references: how a run's target can be imported again (for forks of the run).

A reference is ``path/to/file.py:obj`` or ``package.module:obj`` (``obj()`` for a factory), the
form ``flowdbg run`` takes. ``flowdbg run`` records the one it was given; from Python,
``Debugger.attach(target, ref=...)`` gives it, else :func:`module_reference` looks for the
target among the attributes of the loaded modules when its first run starts.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

__all__ = ["module_reference", "normalize_reference"]

#: modules whose attributes are never a user's target (flowdbg's own and the standard library)
_SKIP_PREFIXES = ("flowdbg", "_pytest", "pytest", "pluggy")
#: the prefix under which ``flowdbg run`` imports a target given as a file
FILE_MODULE_PREFIX = "_flowdbg_target_"


def normalize_reference(spec: str) -> str:
    """``spec`` with a file path made absolute, so that the reference works from any folder.

    :param spec: ``path/to/file.py:obj`` or ``package.module:obj`` (perhaps ``obj()``).
    """
    where, sep, obj = spec.rpartition(":")
    if not sep or "/" in obj or "\\" in obj or (len(where) == 1 and where.isalpha()):
        where, obj = spec, ""  # no object part (a Windows drive letter is not one)
    if where.endswith(".py") or "/" in where or os.sep in where:
        where = os.path.abspath(where)
    return f"{where}:{obj}" if obj else where


def _file_of(module: ModuleType) -> str | None:
    path = getattr(module, "__file__", None)
    return os.path.abspath(path) if isinstance(path, str) and path.endswith(".py") else None


def module_reference(obj: Any) -> str | None:
    """The reference of ``obj`` when a loaded module holds it as an attribute, else ``None``.

    ``__main__`` (a script run with ``python app.py``) and modules ``flowdbg run`` imported
    from files are named by their file, other modules by their name; a public name wins over
    a private one, and a module over the script that imported the object from it: a fork or
    rerun imports that module again, not the script, whose own session would run again.
    """
    best: tuple[int, str] | None = None
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    for name, module in list(sys.modules.items()):
        if not isinstance(module, ModuleType) or name.startswith(_SKIP_PREFIXES):
            continue
        if name.partition(".")[0] in stdlib:
            continue
        try:
            attrs = vars(module)
        except TypeError:
            continue
        for attr, value in list(attrs.items()):
            if value is not obj:
                continue
            # (multiprocessing keeps the script under __mp_main__ too)
            script = name in ("__main__", "__mp_main__")
            if script or name.startswith(FILE_MODULE_PREFIX):
                path = _file_of(module)
                if path is None:
                    continue
                # (flowdbg run's own import of a file first; the script after any module)
                where, rank = path, (4 if script else 0)
            else:
                where, rank = name, 2
            if attr.startswith("_"):
                rank += 1
            if best is None or rank < best[0]:
                best = (rank, f"{where}:{attr}")
    return None if best is None else best[1]


def live_object(ref: str) -> tuple[bool, Any]:
    """``(True, obj)`` when ``ref`` names an attribute of the running script (``__main__``),
    whose file must not be imported a second time (it would run the script again); else
    ``(False, None)``."""
    main = sys.modules.get("__main__")
    where, sep, attr = ref.rpartition(":")
    if main is None or not sep or "(" in attr:
        return False, None
    path = _file_of(main)
    if path is None or os.path.abspath(where) != path:
        return False, None
    obj: Any = main
    for part in attr.split("."):
        if not hasattr(obj, part):
            return False, None
        obj = getattr(obj, part)
    return True, obj
