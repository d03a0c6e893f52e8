"""The record of every step of every debugged run, and the queries that read it back.

The recorder writes runs and steps with :meth:`Store.write_batch` from its writer thread; the
``flowdbg runs`` commands and the Python API read them with :meth:`Store.get_run`,
:meth:`Store.list_runs`, :meth:`Store.get_steps`, :meth:`Store.get_state`,
:meth:`Store.diff_runs` and :meth:`Store.diff_steps`, from any thread or process.
:func:`open_store` opens the default store: ``$FLOWDBG_DB`` if set, else the SQLite file
``.flowdbg/flowdbg.db`` of the nearest folder, from the current one up, holding a ``.flowdbg``
folder (:func:`find_db`), else ``./.flowdbg/flowdbg.db``. Values are stored as
JSON (see :func:`encode_value`); :func:`register_structural` makes a class's instances stored as
typed objects of their fields rather than as opaque reprs.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Sequence

from flowdbg.store._base import (
    DEFAULT_DB,
    Divergence,
    NodeDelta,
    RunDiff,
    StepDiff,
    Store,
    default_db_path,
    find_db,
)
from flowdbg.store._encode import DEFAULT_REDACT, REDACTED, encode_value, register_structural
from flowdbg.store._errors import RunNotFound, StepNotFound, StoreError
from flowdbg.store._ignore import DEFAULT_RULES, Ignored
from flowdbg.store._sqlite import DB_SCHEMA_VERSION, SQLiteStore

__all__ = [
    "DB_SCHEMA_VERSION",
    "DEFAULT_DB",
    "DEFAULT_REDACT",
    "DEFAULT_RULES",
    "REDACTED",
    "Divergence",
    "Ignored",
    "NodeDelta",
    "RunDiff",
    "RunNotFound",
    "SQLiteStore",
    "StepDiff",
    "StepNotFound",
    "Store",
    "StoreError",
    "default_db_path",
    "encode_value",
    "find_db",
    "open_recording_store",
    "open_store",
    "register_structural",
]

log = logging.getLogger("flowdbg.store")

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def open_store(
    db: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    readonly: bool = False,
    immutable: bool | None = None,
) -> Store:
    """Open the store at ``db``.

    :param db: the database file; ``None`` for :func:`default_db_path`.
    :param create: create the database when it does not exist.
    :param readonly: open it for reading only: nothing is written, not even SQLite's ``-shm``
        file where the folder cannot be written (see :class:`SQLiteStore`).
    :param immutable: with ``readonly``, read the file as one that nothing changes (for a
        read-only mount); ``None`` decides by trying.
    :returns: the store (a context manager that closes it).
    :raises StoreError: if there is no database there and ``create`` is false (or ``readonly``),
        if the file is not a flowdbg database or was written by a newer flowdbg, or if it cannot
        be created.
    """
    path = default_db_path() if db is None else db
    text = os.fspath(path)
    if isinstance(text, str) and _URL.match(text):
        raise StoreError(
            f"cannot open {text!r}: only SQLite files are supported yet; pass --db with the path "
            "of a file"
        )
    return SQLiteStore(path, create=create, readonly=readonly, immutable=immutable)


_warned: set[str] = set()
_warned_lock = threading.Lock()


def open_recording_store(
    db: str | os.PathLike[str] | None = None, *, redact: Sequence[str] | None = DEFAULT_REDACT
) -> Store | None:
    """Open the store a debugger records into.

    A database given as ``db`` must open. The default one (``$FLOWDBG_DB`` or the ``.flowdbg``
    folder, see :func:`default_db_path`) may lie in a folder that cannot be written (a
    read-only checkout, a container's mount): then recording is off, with one warning per path
    and process on the ``flowdbg.store`` logger naming the path and the remedy.

    :param db: the database file; ``None`` for the default one.
    :param redact: key patterns whose values are stored as ``"[REDACTED]"``.
    :returns: the store, or ``None`` when the default database cannot be used.
    :raises StoreError: if ``db`` is given and cannot be used.
    """
    if db is not None:
        return SQLiteStore(db, redact=redact)
    path = default_db_path()
    try:
        return SQLiteStore(path, redact=redact)
    except StoreError as exc:
        shown = os.path.abspath(path)
        with _warned_lock:
            if shown in _warned:
                return None
            _warned.add(shown)
        log.warning(
            "flowdbg cannot record runs to %s, so runs go on unrecorded (%s); set FLOWDBG_DB "
            "or pass Debugger(db=...) with a path you can write, or record=False to silence this",
            shown,
            exc,
        )
        return None
