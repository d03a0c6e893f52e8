"""The record of every step of every debugged run, and the queries that read it back.

The recorder writes runs and steps with :meth:`Store.write_batch` from its writer thread; the
``flowdbg runs`` commands and the Python API read them with :meth:`Store.get_run`,
:meth:`Store.list_runs`, :meth:`Store.get_steps`, :meth:`Store.get_state` and
:meth:`Store.diff_runs`, from any thread or process. :func:`open_store` opens the default
store: an SQLite file at ``./.flowdbg/flowdbg.db`` (or ``$FLOWDBG_DB``). Values are stored as
JSON (see :func:`encode_value`); :func:`register_structural` makes a class's instances stored as
typed objects of their fields rather than as opaque reprs.
"""

from __future__ import annotations

import os
import re

from flowdbg.store._base import (
    DEFAULT_DB,
    Divergence,
    NodeDelta,
    RunDiff,
    Store,
    default_db_path,
)
from flowdbg.store._encode import DEFAULT_REDACT, REDACTED, encode_value, register_structural
from flowdbg.store._errors import RunNotFound, StepNotFound, StoreError
from flowdbg.store._sqlite import DB_SCHEMA_VERSION, SQLiteStore

__all__ = [
    "DB_SCHEMA_VERSION",
    "DEFAULT_DB",
    "DEFAULT_REDACT",
    "REDACTED",
    "Divergence",
    "NodeDelta",
    "RunDiff",
    "RunNotFound",
    "SQLiteStore",
    "StepNotFound",
    "Store",
    "StoreError",
    "default_db_path",
    "encode_value",
    "open_store",
    "register_structural",
]

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def open_store(
    db: str | os.PathLike[str] | None = None, *, create: bool = True, readonly: bool = False
) -> Store:
    """Open the store at ``db``.

    :param db: the database file; ``None`` for :func:`default_db_path`.
    :param create: create the database when it does not exist.
    :param readonly: open it for reading only.
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
    return SQLiteStore(path, create=create, readonly=readonly)
