"""The embedded store: one SQLite file, shared safely by threads and processes.

The file is in WAL mode: readers never block the writer and see whole transactions only; every
:meth:`SQLiteStore.write_batch` (and :meth:`~SQLiteStore.write_fields`, the recorder's way in)
is one ``BEGIN IMMEDIATE`` transaction, so a process killed at any moment leaves every batch it
committed. Each thread has its own connection.

Values live in the content-addressed ``blobs`` table (see :mod:`flowdbg.store._encode`); a
column holding a value holds its *entry*: ``'[value]'`` inline, or ``'"key"'`` for a blob.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flowdbg._redact import _MIN_TEXT, redactor
from flowdbg.events import ErrorInfo
from flowdbg.records import RunRecord, StepRecord
from flowdbg.store._base import DiffRow, Store
from flowdbg.store._encode import (
    DEFAULT_REDACT,
    Encoder,
    Packer,
    build,
    child_keys,
    compile_redact,
    compress,
    flat_column,
    parse_blob,
    to_json,
    top_level,
)
from flowdbg.store._errors import RunNotFound, StepNotFound, StoreError

__all__ = ["DB_SCHEMA_VERSION", "SQLiteStore"]

log = logging.getLogger("flowdbg.store")

_HOST = socket.gethostname()
#: small flat dicts whose columns a store remembers (see SQLiteStore._encode); no more keys
#: than flat_column takes
_FLAT_CACHED_KEYS = 8
#: the types of the values of a small dict whose column is remembered (hashable, and equal only
#: when their JSON is: not float, whose -0.0 equals 0.0), and of one that may have a flat column
_CACHED_KINDS = frozenset({str, int, bool, type(None)})
_FLAT_KINDS = _CACHED_KINDS | {float}
_FLAT_CACHE = 4096
_SQLITE_MAGIC = b"SQLite format 3\x00"
_BUSY_TIMEOUT = 30.0
_MIN_PREFIX = 4
_BATCH = 500  # host parameters per IN (...) list
_KNOWN_MAX = 100_000

#: the types of functions and methods (by their names as the encoder gives them), which a
#: state may hold and which are stored as their repr without a warning (see SQLiteStore._warn)
_CODE_TYPES = frozenset(
    {
        "builtins.function",
        "builtins.method",
        "builtins.builtin_function_or_method",
        "builtins.method-wrapper",
        "builtins.method_descriptor",
        "builtins.wrapper_descriptor",
        "functools.partial",
    }
)
#: the type of a name (decisions whose keys and values are all names are cached)
_STR = frozenset({str})
#: values a step's value may be kept as it is when frozen (immutable)
_SCALARS = frozenset({str, int, float, bool, type(None)})


class _Frozen:
    """A value encoded when the recorder took it (:meth:`SQLiteStore.freeze`: a unit's or a
    run's, as it started or ended): plain and redacted, with the types of its parts stored as
    a repr."""

    __slots__ = ("failures", "plain")

    def __init__(self, plain: Any, failures: tuple[str, ...]) -> None:
        self.plain = plain
        self.failures = failures


# --------------------------------------------------------------------------------------------
# Schema and migrations
# --------------------------------------------------------------------------------------------

_V1 = [
    """CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        parent TEXT,
        root TEXT,
        parent_step INTEGER,
        name TEXT NOT NULL,
        framework TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at REAL NOT NULL,
        ended_at REAL,
        error_type TEXT,
        error_module TEXT,
        error_message TEXT,
        error_traceback TEXT,
        input_ref TEXT,
        output_ref TEXT,
        tags TEXT NOT NULL DEFAULT '{}',
        path TEXT NOT NULL DEFAULT '[]',
        pid INTEGER,
        host TEXT,
        step_count INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX runs_started ON runs (started_at, id)",
    "CREATE INDEX runs_parent ON runs (parent, started_at, id)",
    "CREATE INDEX runs_status ON runs (status, started_at, id)",
    "CREATE INDEX runs_root ON runs (root)",
    """CREATE TABLE steps (
        run_id TEXT NOT NULL,
        step INTEGER NOT NULL,
        superstep INTEGER,
        path TEXT NOT NULL DEFAULT '[]',
        node TEXT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at REAL NOT NULL,
        ended_at REAL,
        duration REAL,
        decision TEXT,
        error_type TEXT,
        error_module TEXT,
        error_message TEXT,
        error_traceback TEXT,
        branch TEXT,
        attempt INTEGER NOT NULL DEFAULT 1,
        input_ref TEXT,
        output_ref TEXT,
        state_ref TEXT,
        partial INTEGER NOT NULL DEFAULT 0,
        child_run_id TEXT,
        PRIMARY KEY (run_id, step)
    ) WITHOUT ROWID""",
    # (Databases made before 2026-11-24 also have the index steps_state, dropped on opening: see
    # _RETIRED_INDEXES.)
    """CREATE TABLE blobs (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        data BLOB NOT NULL
    )""",
]


def _migrate_to_1(conn: sqlite3.Connection) -> None:
    for statement in _V1:
        conn.execute(statement)


#: Indexes that earlier versions made in schema 1 and that are dropped when a database is opened
#: for writing. ``steps_state`` (``steps (run_id, step) WHERE state_ref IS NOT NULL``) cost the
#: writer about a microsecond per step; get_state reads the primary key backwards to the latest
#: step with a state instead, which is as fast where units have states (a few rows read) and
#: reads every row back to the last state otherwise (7 ms for 100,000 stateless steps). Readers
#: never name an index, so an older flowdbg reads and writes either form.
_RETIRED_INDEXES = ("steps_state",)


def _migrate_to_2(conn: sqlite3.Connection) -> None:
    # lineage: the target's import reference, and where a fork, rerun or rewind came from
    # (older runs have none: NULL)
    for column in ("target TEXT", "origin TEXT", "forked_from TEXT", "fork_step INTEGER"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    conn.execute("CREATE INDEX runs_forked ON runs (forked_from, started_at, id)")
    # a rerun's model and tool calls served from the record instead of running
    conn.execute("ALTER TABLE steps ADD COLUMN cached INTEGER NOT NULL DEFAULT 0")


def _migrate_to_3(conn: sqlite3.Connection) -> None:
    # the config a run was started with (flowdbg run --config), which a rerun starts with
    # again (older runs have none: NULL)
    conn.execute("ALTER TABLE runs ADD COLUMN config_ref TEXT")


def _migrate_to_4(conn: sqlite3.Connection) -> None:
    # the run's state before its first unit, the baseline of last_writers (older runs have
    # none: NULL, and their input stands for it)
    conn.execute("ALTER TABLE runs ADD COLUMN initial_ref TEXT")


#: ``READ_AS_CURRENT[n]``: temporary views under which a database of schema ``n`` reads as one
#: of :data:`DB_SCHEMA_VERSION` (the columns added since, as their defaults), so that a
#: read-only store reads an older database it may not migrate: SQLite finds a temporary view
#: before the table of the same name, and a read-only connection may create one. (A new schema
#: version updates these views, or drops the entry: such databases are then refused read-only.)
READ_AS_CURRENT: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TEMP VIEW runs AS SELECT *, NULL AS target, NULL AS origin, "
        "NULL AS forked_from, NULL AS fork_step, NULL AS config_ref, NULL AS initial_ref "
        "FROM main.runs",
        "CREATE TEMP VIEW steps AS SELECT *, 0 AS cached FROM main.steps",
    ),
    2: (
        "CREATE TEMP VIEW runs AS SELECT *, NULL AS config_ref, NULL AS initial_ref FROM main.runs",
    ),
    3: ("CREATE TEMP VIEW runs AS SELECT *, NULL AS initial_ref FROM main.runs",),
}

#: ``MIGRATIONS[n]`` brings a database from schema ``n`` to ``n + 1`` (inside a transaction)
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
    _migrate_to_4,
]
#: the database schema this flowdbg writes and reads (the --json envelope has its own version)
DB_SCHEMA_VERSION = len(MIGRATIONS)

_RUN_COLUMNS = (
    "id, parent, root, parent_step, name, framework, status, started_at, ended_at, "
    "error_type, error_module, error_message, error_traceback, input_ref, output_ref, tags, "
    "path, pid, host, step_count, target, origin, forked_from, fork_step, config_ref, "
    "initial_ref"
)
_STEP_COLUMNS = (
    "run_id, step, superstep, path, node, kind, status, started_at, ended_at, duration, "
    "decision, error_type, error_module, error_message, error_traceback, branch, attempt, "
    "input_ref, output_ref, state_ref, partial, child_run_id, cached"
)
_STEP_PARAMS = ", ".join("?" * len(_STEP_COLUMNS.split(", ")))

_UPSERT_RUN = """
INSERT INTO runs (id, parent, root, parent_step, name, framework, status, started_at, ended_at,
    error_type, error_module, error_message, error_traceback, input_ref, output_ref, tags, path,
    pid, host, step_count, target, origin, forked_from, fork_step, config_ref, initial_ref)
VALUES (:id, :parent, :root, :parent_step, :name, :framework, :status, :started_at, :ended_at,
    :error_type, :error_module, :error_message, :error_traceback, :input_ref, :output_ref, :tags,
    :path, :pid, :host, (SELECT count(*) FROM steps WHERE run_id = :id), :target, :origin,
    :forked_from, :fork_step, :config_ref, :initial_ref)
ON CONFLICT (id) DO UPDATE SET
    parent = excluded.parent, root = excluded.root, parent_step = excluded.parent_step,
    name = excluded.name, framework = excluded.framework, started_at = excluded.started_at,
    tags = excluded.tags, path = excluded.path,
    target = coalesce(excluded.target, target), origin = coalesce(excluded.origin, origin),
    forked_from = coalesce(excluded.forked_from, forked_from),
    fork_step = coalesce(excluded.fork_step, fork_step),
    pid = coalesce(excluded.pid, pid), host = coalesce(excluded.host, host),
    input_ref = coalesce(excluded.input_ref, input_ref),
    config_ref = coalesce(excluded.config_ref, config_ref),
    initial_ref = coalesce(excluded.initial_ref, initial_ref),
    {ending}
"""
# a run that started: never turns an ended run back into a running one
_STARTED = _UPSERT_RUN.format(
    ending="""status = CASE WHEN excluded.status = 'running' THEN status ELSE excluded.status END,
    ended_at = coalesce(excluded.ended_at, ended_at),
    output_ref = coalesce(excluded.output_ref, output_ref),
    error_type = coalesce(excluded.error_type, error_type),
    error_module = coalesce(excluded.error_module, error_module),
    error_message = coalesce(excluded.error_message, error_message),
    error_traceback = coalesce(excluded.error_traceback, error_traceback)"""
)
# a run that ended: its outcome replaces what was there
_ENDED = _UPSERT_RUN.format(
    ending="""status = excluded.status, ended_at = excluded.ended_at,
    output_ref = excluded.output_ref, error_type = excluded.error_type,
    error_module = excluded.error_module, error_message = excluded.error_message,
    error_traceback = excluded.error_traceback"""
)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _alive(pid: int | None, host: str | None) -> bool:
    """Whether the process that recorded a run may still be running it."""
    if pid is None or host != _HOST or pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's live process
        return True
    try:  # a killed child not yet reaped by its parent still answers signals
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _text(value: str | None) -> str | None:
    """Text SQLite can store: lone surrogates (from badly decoded bytes) escaped."""
    if value is None or value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _where(where: str | tuple[Any, ...]) -> str:
    """Where a value comes from, for a warning: a text, or a step's fields (made into text only
    when a warning is due)."""
    return where if type(where) is str else f"at step {where[1]} of run {where[0]}"


@functools.lru_cache(maxsize=1024)
def _path_column(path: tuple[str, ...]) -> str:
    return to_json(list(path)) if path else "[]"


def _path_text(path: Sequence[str]) -> str:
    """The path column of a step (a run's steps share their path: made once)."""
    if type(path) is tuple:
        try:
            return _path_column(path)
        except TypeError:  # not names (unhashable): made each time
            pass
    return to_json(list(path)) if path else "[]"


_NO_ERROR = (None, None, None, None)


def _error_columns(error: ErrorInfo | None, keys: re.Pattern[str] | None) -> tuple[str | None, ...]:
    if error is None:
        return (None, None, None, None)
    message, traceback = error.message, error.traceback
    found = None if keys is None else redactor(keys)
    if found is not None:  # an exception's text may hold a secret too (a URL with a password)
        message, traceback = found.text(message), found.text(traceback)
    return (_text(error.type), _text(error.module), _text(message), _text(traceback))


def _error(row: Sequence[Any], at: int) -> ErrorInfo | None:
    if row[at] is None:
        return None
    return ErrorInfo(
        type=row[at],
        module=row[at + 1] or "",
        message=row[at + 2] or "",
        traceback=row[at + 3] or "",
    )


_decode = json.JSONDecoder().decode


def _entry(column: str | None) -> Any:
    return None if column is None else _decode(column)


@functools.lru_cache(maxsize=1024)
def _path(column: str) -> tuple[str, ...]:
    """A path column as a tuple (paths repeat on every step of a run: parse each once)."""
    return tuple(_decode(column))


def _chunked(items: Sequence[Any], size: int = _BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _prefix_end(prefix: str) -> str:
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _short(run_id: str) -> str:
    return run_id[:8]


# --------------------------------------------------------------------------------------------
# The store
# --------------------------------------------------------------------------------------------


class SQLiteStore(Store):
    """Runs recorded in one SQLite file.

    :param path: the database file; created (with its folder) when missing, unless ``create``
        is false.
    :param create: create the database if it does not exist.
    :param readonly: open for reading only; :meth:`write_batch` and :meth:`prune` raise.
        Nothing is written, and the file may be read-only: SQLite opens it with ``mode=ro``,
        which still needs the ``-shm`` file next to it (a WAL database's shared memory) or a
        folder it can create it in. Where neither is there (a read-only folder or mount),
        the file is opened ``immutable``.
    :param immutable: with ``readonly``: ``True`` reads the file as one nothing changes
        (SQLite's ``immutable=1``: no ``-shm`` file, no locks, and transactions still in the
        ``-wal`` file unseen); ``False`` never does; ``None`` (the default) tries ``mode=ro``
        first and falls back to it.
    :param redact: key patterns whose values are stored as ``"[REDACTED]"`` (case-insensitive
        regular expressions); ``()`` to store everything.
    :raises StoreError: if the file is not a flowdbg database, was written by a newer flowdbg,
        is missing (``create=False`` or ``readonly``), or cannot be created.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        readonly: bool = False,
        immutable: bool | None = None,
        redact: Sequence[str] | None = DEFAULT_REDACT,
    ) -> None:
        self._file = Path(os.fspath(path)).expanduser().absolute()
        self.path = str(self._file)
        self.readonly = readonly
        #: the schema of an older database read (read-only) through views, else None
        self._older: int | None = None
        #: whether the file is read as immutable (decided on opening when not given)
        self.immutable = bool(readonly and immutable)
        self._may_fall_back = readonly and immutable is None
        self._redact = compile_redact(
            redact if redact is None or isinstance(redact, str) else tuple(redact)
        )
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False
        # blob keys this store committed, so that unchanged values are not offered again; void
        # when another connection prunes (the prune generation in meta changes)
        self._known: dict[str, None] = {}
        #: the blob keys of long strings met before (see Packer)
        self._long_keys: dict[tuple[int, int, int], str] = {}
        #: the columns of small flat dicts met before, by content (see _encode)
        self._flat: dict[tuple[Any, ...], str] = {}
        #: the decision columns of lists of short node names met before
        self._decisions: dict[tuple[Any, ...], str] = {}
        self._known_generation: str | None = None
        self._warned: set[str] = set()
        self._check_file(create and not readonly)
        self._setup(self._connect())

    def __repr__(self) -> str:
        mode = ", immutable=True" if self.immutable else ", readonly=True" if self.readonly else ""
        return f"SQLiteStore({self.path!r}{mode})"

    # -- opening --

    def _missing(self) -> StoreError:
        return StoreError(f"no flowdbg database at {self.path}; record a run first or pass --db")

    def _foreign(self, why: str) -> StoreError:
        return StoreError(
            f"{self.path} is not a flowdbg database ({why}); pass --db with the path of a "
            "flowdbg database, or move that file away"
        )

    def _check_file(self, create: bool) -> None:
        """Refuse files that are not SQLite before SQLite touches them; create the folder."""
        try:
            if self._file.is_dir():
                raise self._foreign("it is a directory")
            if self._file.exists():
                with open(self._file, "rb") as file:
                    head = file.read(len(_SQLITE_MAGIC))
                if head and head != _SQLITE_MAGIC:
                    raise self._foreign("it is not an SQLite file")
                if not self.readonly and not os.access(self._file, os.W_OK):
                    # SQLite would open it read-only without a word, and fail at the first write
                    raise StoreError(
                        f"cannot write the flowdbg database {self.path}: the file is read-only; "
                        "make it writable, or pass --db (or set FLOWDBG_DB) with a path you can "
                        "write"
                    )
                if head or create:
                    return
                raise self._missing()  # an empty file, and we may not create the database
            if not create:
                raise self._missing()
            self._file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot use {self.path} as a flowdbg database ({exc.strerror or exc}); pass "
                "--db (or set FLOWDBG_DB) with a path you can write"
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the store {self.path} is closed; open it again with open_store()")
        try:
            if self.readonly:
                conn = sqlite3.connect(
                    self._file.as_uri()
                    + ("?mode=ro&immutable=1" if self.immutable else "?mode=ro"),
                    uri=True,
                    timeout=_BUSY_TIMEOUT,
                    isolation_level=None,
                    check_same_thread=False,
                )
            else:
                conn = sqlite3.connect(
                    self._file,
                    timeout=_BUSY_TIMEOUT,
                    isolation_level=None,
                    check_same_thread=False,
                )
            conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT * 1000)}")
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the flowdbg database {self.path} ({exc}); pass --db (or set "
                "FLOWDBG_DB) with a path you can write"
            ) from exc
        with self._lock:
            self._connections.append(conn)
        self._local.conn = conn
        self._local.pid = os.getpid()
        return conn

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid() or self._closed:
            conn = self._connect()
            if not self.readonly:
                conn.execute("PRAGMA synchronous = NORMAL")
            elif self._older is not None:
                self._read_older(conn)
        return conn

    def _read_older(self, conn: sqlite3.Connection) -> None:
        """Show an older database (schema :attr:`_older`) as this flowdbg's schema on ``conn``
        (read-only: see :data:`READ_AS_CURRENT`)."""
        assert self._older is not None
        for statement in READ_AS_CURRENT[self._older]:
            conn.execute(statement)

    def _readable(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        """A read-only connection that can read: the given one, or an immutable one when the
        ``-shm`` file of a WAL database can be neither opened nor created."""
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            # only a -shm file SQLite may neither open nor create ("readonly", "unable to
            # open"): a busy or damaged database must not be read as immutable
            text = str(exc).lower()
            if not self._may_fall_back or not ("readonly" in text or "unable to open" in text):
                raise
            reason = exc
        self._may_fall_back = False
        with self._lock:
            self._connections.remove(conn)
        conn.close()
        self.immutable = True
        conn = self._connect()
        wal = Path(f"{self._file}-wal")
        pending = wal.exists() and wal.stat().st_size > 0
        (log.warning if pending else log.info)(
            "flowdbg reads %s as immutable since SQLite cannot open it read-only in place (%s)%s",
            self.path,
            reason,
            "; the transactions still in its -wal file are not seen: copy the database with its "
            "-wal file to a folder you can write and read the copy to see them"
            if pending
            else "",
        )
        return conn

    def _setup(self, conn: sqlite3.Connection) -> None:
        """Check the schema, then create or migrate it, all before writing anything."""
        try:
            if self.readonly:
                conn = self._readable(conn)
            version = self._schema_version(conn)
            if version is None and self.readonly:
                raise self._missing()
            if version is not None and version > DB_SCHEMA_VERSION:
                raise self._newer(version)
            if self.readonly:
                if version != DB_SCHEMA_VERSION:
                    assert version is not None
                    if version not in READ_AS_CURRENT:
                        raise StoreError(
                            f"database {self.path} has schema {version}, older than this "
                            f"flowdbg's ({DB_SCHEMA_VERSION}); upgrade it by recording a run "
                            "into it (or by open_store() without readonly) where it can be "
                            "written"
                        )
                    # read as it is: each connection sees it through the views
                    self._older = version
                    self._read_older(conn)
                return
            # Only now is the file known to be ours (or empty): it may be changed.
            self._wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            if version != DB_SCHEMA_VERSION:
                self._migrate(conn)
            self._retire_indexes(conn)
        except sqlite3.DatabaseError as exc:
            self.close()
            if isinstance(exc, sqlite3.OperationalError):
                raise StoreError(
                    f"cannot use the flowdbg database {self.path} ({exc}); pass --db (or set "
                    "FLOWDBG_DB) with a path you can write"
                ) from exc
            raise self._foreign(str(exc)) from exc
        except BaseException:
            self.close()
            raise

    def _retire_indexes(self, conn: sqlite3.Connection) -> None:
        """Drop the indexes of :data:`_RETIRED_INDEXES` that the database has."""
        marks = ", ".join("?" * len(_RETIRED_INDEXES))
        sql = f"SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ({marks})"
        if not conn.execute(sql, _RETIRED_INDEXES).fetchall():
            return  # nothing to drop: no write lock taken
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for (name,) in conn.execute(sql, _RETIRED_INDEXES).fetchall():
                    conn.execute(f"DROP INDEX IF EXISTS {name}")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            # a busy or full database: the index only costs time, so it waits for next time
            log.info("flowdbg could not drop a retired index of %s: %s", self.path, exc)

    def _wal(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL mode (it stays with the file).

        Changing the journal mode does not wait for a busy database the way other statements
        do (``busy_timeout`` is not consulted), so processes creating the database at the same
        moment retry here.
        """
        deadline = time.monotonic() + _BUSY_TIMEOUT
        delay = 0.001
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _newer(self, version: int) -> StoreError:
        return StoreError(
            f"database {self.path} was written by a newer flowdbg (schema {version}; this "
            f"flowdbg reads up to {DB_SCHEMA_VERSION}); upgrade flowdbg"
        )

    def _schema_version(self, conn: sqlite3.Connection) -> int | None:
        """The schema version; ``None`` for an empty database; refuses foreign ones."""
        tables = {
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if not tables:
            return None
        if "meta" not in tables:
            listed = ", ".join(sorted(tables)[:5])
            raise self._foreign(f"it has tables {listed} but no flowdbg schema")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("app") != "flowdbg":
            raise self._foreign("its meta table is not flowdbg's")
        try:
            return int(meta["schema_version"])
        except (KeyError, ValueError):
            raise self._foreign("it has no schema version") from None

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._schema_version(conn)  # again: another process may have done it
            if version is not None and version > DB_SCHEMA_VERSION:
                raise self._newer(version)
            if version is None:
                conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("app", "flowdbg"), ("schema_version", "0"), ("prune_generation", "0")],
                )
                version = 0
            for migrate in MIGRATIONS[version:]:
                migrate(conn)
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(DB_SCHEMA_VERSION),)
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close every connection of this store (from any thread)."""
        self._closed = True
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            try:
                conn.close()
            except sqlite3.Error:  # pragma: no cover - closing does not fail in practice
                pass

    # -- transactions --

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(
                f"could not {doing} the flowdbg database {self.path} ({exc}); check that the disk "
                "has room and the file is writable, or pass --db with another path"
            ) from exc

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same snapshot."""
        conn = self._conn()
        with self._errors("read"):
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")  # nothing was written: just end the snapshot

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.readonly:
            raise StoreError(
                f"the store {self.path} is open read-only; open it without readonly to change it"
            )
        conn = self._conn()
        with self._errors("write to"):
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (disk full)
                    conn.execute("ROLLBACK")
                raise

    # -- writing --

    def freeze(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """See :meth:`Store.freeze`: each value encoded now (on the calling thread, with an
        encoder of its own), into a form :meth:`write_fields` packs without encoding it again.

        Plain scalars are kept, and a small dict of them is copied (the writer's cache of
        such dicts' columns then serves it, see :meth:`_encode`). A value met twice among
        ``values`` (the same message in a step's output and its state) is encoded once; nothing
        is remembered from one call to the next, as the objects may change in between.
        """
        encoder: Encoder | None = None  # taken at the first value to encode (plain ones need none)
        frozen: list[Any] = []
        try:
            for value in values:
                kind = type(value)
                if kind in _SCALARS:
                    frozen.append(value)
                elif (
                    kind is dict
                    and len(value) <= _FLAT_CACHED_KEYS
                    and _FLAT_KINDS.issuperset(map(type, value.values()))
                ):
                    frozen.append(dict(value))
                else:
                    if encoder is None:
                        local = self._local
                        # A subclass that takes records (the base class's write_fields, for its
                        # write_batch) gets plain values in them, not this store's own wrapper
                        # (nor the partial flag).
                        wrap = type(self).write_fields is SQLiteStore.write_fields
                        encoder = getattr(local, "encoder", None)
                        if encoder is None:
                            encoder = Encoder(self._redact)
                        else:
                            # taken while in use: a value's serializer running a unit that is
                            # recorded (on this thread) gets an encoder of its own
                            local.encoder = None
                    plain, partial = encoder.encode(value)
                    if wrap:
                        plain = _Frozen(plain, tuple(encoder.failures) if partial else ())
                    frozen.append(plain)
        finally:
            if encoder is not None:
                encoder.forget()  # keeps no object alive, and sees changed objects anew
                local.encoder = encoder
        return tuple(frozen)

    def _encode(
        self, encoder: Encoder, packer: Packer, value: Any, where: str | tuple[Any, ...]
    ) -> tuple[str | None, bool]:
        if value is None:
            return None, False
        if type(value) is _Frozen:
            if value.failures:
                self._warn(value.failures, _where(where))
            return packer.column(value.plain), bool(value.failures)
        if type(value) is dict and len(value) <= _FLAT_CACHED_KEYS:
            # A small dict of scalars met before (a step's input is the state after the step
            # before it) has its column remembered, by content: its items and their types
            # (True and 1 are equal; a float is left out, -0.0 being equal to 0.0). The tuples
            # and the type check are C loops: this runs for most values of small steps.
            kinds = tuple(map(type, value.values()))
            if _CACHED_KINDS.issuperset(kinds):
                # one flat tuple (the pairs, then their types): a nested one costs the
                # garbage collector more, as the cache holds thousands
                key = tuple(value.items()) + kinds
                cacheable = True
                try:
                    found = self._flat.get(key)
                except Exception:  # a key whose == raises: never cached, nothing to find
                    found, cacheable = None, False
                if found is not None:
                    return found, False
                column = flat_column(encoder, value)
                if column is not None:
                    if cacheable:
                        if len(self._flat) >= _FLAT_CACHE:
                            self._flat.clear()
                        self._flat[key] = column
                    return column, False
            elif float in kinds and _FLAT_KINDS.issuperset(kinds):
                column = flat_column(encoder, value)
                if column is not None:
                    return column, False
        plain, partial = encoder.encode(value)
        if partial:
            self._warn(encoder.failures, _where(where))
        return packer.column(plain), partial

    def _warn(self, types: Iterable[str], where: str) -> None:
        for name in types:
            with self._lock:
                if name in self._warned:
                    continue
                self._warned.add(name)
            if name in _CODE_TYPES:
                # code kept in a state (a LlamaIndex memory's tokenizer function): no data of
                # the user's is lost, so no warning they could do nothing about
                log.info("flowdbg stored a value of type %s %s as its repr", name, where)
                continue
            log.warning(
                "flowdbg could not serialize a value of type %s %s; stored its repr", name, where
            )

    def _run_params(self, run: RunRecord, encoder: Encoder, packer: Packer) -> dict[str, Any]:
        where = f"of run {run.run_id}"
        input_ref, _ = self._encode(encoder, packer, run.input, "in the input " + where)
        output_ref, _ = self._encode(encoder, packer, run.output, "in the output " + where)
        config_ref, _ = self._encode(encoder, packer, run.config, "in the config " + where)
        initial_ref, _ = self._encode(
            encoder, packer, run.initial_state, "in the state before the first step " + where
        )
        error_type, error_module, error_message, error_traceback = _error_columns(
            run.error, self._redact
        )
        return {
            "id": run.run_id,
            "parent": run.parent_run_id,
            "root": run.root_run_id,
            "parent_step": run.parent_step,
            "name": _text(run.name),
            "framework": run.framework,
            "status": run.status,
            "started_at": run.started_at,
            "ended_at": run.ended_at,
            "error_type": error_type,
            "error_module": error_module,
            "error_message": error_message,
            "error_traceback": error_traceback,
            "input_ref": input_ref,
            "output_ref": output_ref,
            "tags": json.dumps({str(k): str(v) for k, v in (run.tags or {}).items()}),
            "path": to_json(list(run.path)) if run.path else "[]",
            "pid": run.pid,
            "host": run.host,
            "target": _text(run.target),
            "origin": run.origin,
            "forked_from": run.forked_from,
            "fork_step": run.fork_step,
            "config_ref": config_ref,
            "initial_ref": initial_ref,
        }

    def _step_row(
        self, fields: tuple[Any, ...], encoder: Encoder, packer: Packer
    ) -> tuple[Any, ...]:
        """The steps row of a step given as its fields (see :meth:`Store.write_fields`)."""
        (
            run_id,
            step,
            node,
            kind,
            path,
            superstep,
            branch,
            attempt,
            status,
            started_at,
            ended_at,
            input_value,
            output_value,
            state_value,
            routed,
            error,
            partial,
            child_run_id,
            cached,
        ) = fields
        where = fields
        encode = self._encode
        input_ref, p1 = encode(encoder, packer, input_value, where)
        output_ref, p2 = encode(encoder, packer, output_value, where)
        state_ref, p3 = encode(encoder, packer, state_value, where)
        decision = None
        p4 = False
        if routed is not None:
            if type(routed) is list and all(
                type(name) is str and len(name) < _MIN_TEXT for name in routed
            ):  # short node names (too short for a token's shape: nothing to redact)
                names = tuple(routed)
                decision = self._decisions.get(names)
                if decision is None:
                    decision = to_json(routed)
                    if len(self._decisions) >= _FLAT_CACHE:
                        self._decisions.clear()
                    self._decisions[names] = decision
            elif (
                type(routed) is dict
                and len(routed) <= _FLAT_CACHED_KEYS
                and _STR.issuperset(map(type, routed))
                and _STR.issuperset(map(type, routed.values()))
            ):  # names for names (a LlamaIndex step's {step: event type}): cached by its items
                # (tagged: {} must not find the text of [], whose key is the empty tuple)
                pairs = (dict, *routed.items())
                decision = self._decisions.get(pairs)
                if decision is None:
                    plain, p4 = encoder.encode(routed)  # (long names are checked for secrets)
                    if p4:
                        self._warn(encoder.failures, _where(where))
                    decision = to_json(plain)
                    if not p4:
                        if len(self._decisions) >= _FLAT_CACHE:
                            self._decisions.clear()
                        self._decisions[pairs] = decision
            else:  # anything else (a Send holding a dict cannot be a cache key)
                plain, p4 = encoder.encode(routed)
                if p4:
                    self._warn(encoder.failures, _where(where))
                decision = to_json(plain)
        return (
            run_id,
            step,
            superstep,
            _path_text(path),
            node if type(node) is str and node.isascii() else _text(node),
            kind,
            status,
            started_at,
            ended_at,
            None if ended_at is None else ended_at - started_at,
            decision,
            *(_NO_ERROR if error is None else _error_columns(error, self._redact)),
            branch if branch is None or branch.isascii() else _text(branch),
            attempt,
            input_ref,
            output_ref,
            state_ref,
            int(bool(partial or p1 or p2 or p3 or p4)),
            child_run_id,
            int(cached),
        )

    def write_batch(
        self,
        *,
        runs: Sequence[RunRecord] = (),
        steps: Sequence[StepRecord] = (),
        ended: Sequence[RunRecord] = (),
    ) -> None:
        """See :meth:`Store.write_batch`."""
        self._write_steps(
            runs,
            [
                (
                    s.run_id,
                    s.step,
                    s.node,
                    s.kind,
                    s.path,
                    s.superstep,
                    s.branch,
                    s.attempt,
                    s.status,
                    s.started_at,
                    s.ended_at,
                    s.input,
                    s.output,
                    s.state,
                    s.decision,
                    s.error,
                    s.partial,
                    s.child_run_id,
                    s.cached,
                )
                for s in steps
            ],
            ended,
        )

    def write_fields(
        self,
        *,
        runs: Sequence[RunRecord] = (),
        steps: Sequence[tuple[Any, ...]] = (),
        ended: Sequence[RunRecord] = (),
    ) -> None:
        """See :meth:`Store.write_fields`."""
        self._write_steps(runs, steps, ended)

    def _write_steps(
        self,
        runs: Sequence[RunRecord],
        steps: Sequence[tuple[Any, ...]],
        ended: Sequence[RunRecord],
    ) -> None:
        # write_batch and write_fields both come here, so that a subclass may override either
        if not (runs or steps or ended):
            return
        # Serialize before taking the write lock, so that other writers wait only for SQL.
        encoder = Encoder(self._redact)
        packer = Packer(self._long_keys, self._known)
        started_rows = [self._run_params(run, encoder, packer) for run in runs]
        step_rows: dict[str, list[tuple[Any, ...]]] = {}
        step_row = self._step_row
        for fields in steps:
            row = step_row(fields, encoder, packer)
            run_rows = step_rows.get(row[0])
            if run_rows is None:
                step_rows[row[0]] = [row]
            else:
                run_rows.append(row)
        ended_rows = [self._run_params(run, encoder, packer) for run in ended]
        with self._lock:
            fresh = [key for key in packer.blobs if key not in self._known]
        stored: dict[str, bytes | bytearray] = {key: compress(packer.blobs[key]) for key in fresh}
        stored.update(packer.ready)  # made in their stored form
        with self._write() as conn:
            generation = conn.execute(
                "SELECT value FROM meta WHERE key = 'prune_generation'"
            ).fetchone()[0]
            with self._lock:
                if generation != self._known_generation:  # pruned since: offer everything
                    self._known.clear()
                    self._known_generation = generation
                offered = [key for key in packer.blobs if key not in self._known]
                offered += [key for key in packer.ready if key not in self._known]
                # long strings taken as stored already: after a prune, maybe not any more
                again = [key for key in packer.reused if key not in self._known]
            rows = [(key, stored.get(key) or compress(packer.blobs[key])) for key in offered]
            rows += [(key, compress(packer.reused_blob(key))) for key in again]
            conn.executemany("INSERT OR IGNORE INTO blobs (hash, data) VALUES (?, ?)", rows)
            offered += again
            conn.executemany(_STARTED, started_rows)
            if step_rows:
                self._insert_steps(conn, step_rows)
            conn.executemany(_ENDED, ended_rows)
        with self._lock:
            if generation == self._known_generation:
                if len(self._known) + len(offered) > _KNOWN_MAX:
                    self._known.clear()
                self._known.update(dict.fromkeys(offered))

    @staticmethod
    def _insert_steps(
        conn: sqlite3.Connection, step_rows: Mapping[str, list[tuple[Any, ...]]]
    ) -> None:
        """Insert the steps of a batch with one statement, and count them in their runs.

        A step written before (recorded as running while held at a stop, or by a writer that
        crashed mid-batch) makes the insert skip rows: the batch is then written again over
        what is there, and the runs' step counts are counted afresh."""
        rows = [row for run_rows in step_rows.values() for row in run_rows]
        added = conn.executemany(
            f"INSERT OR IGNORE INTO steps ({_STEP_COLUMNS}) VALUES ({_STEP_PARAMS})", rows
        ).rowcount
        if added == len(rows):
            conn.executemany(
                "UPDATE runs SET step_count = step_count + ? WHERE id = ?",
                [(len(run_rows), run_id) for run_id, run_rows in step_rows.items()],
            )
            return
        conn.executemany(
            f"INSERT OR REPLACE INTO steps ({_STEP_COLUMNS}) VALUES ({_STEP_PARAMS})", rows
        )
        conn.executemany(
            "UPDATE runs SET step_count = (SELECT count(*) FROM steps WHERE run_id = ?) "
            "WHERE id = ?",
            [(run_id, run_id) for run_id in step_rows],
        )

    # -- reading values --

    def _load(self, conn: sqlite3.Connection, entries: Iterable[Any]) -> dict[str, tuple[int, Any]]:
        """Every blob the entries reach, parsed, by key."""
        blobs: dict[str, tuple[int, Any]] = {}
        pending = list({entry for entry in entries if type(entry) is str})
        while pending:
            found: list[str] = []
            for chunk in _chunked(pending):
                marks = ", ".join("?" * len(chunk))
                for key, data in conn.execute(
                    f"SELECT hash, data FROM blobs WHERE hash IN ({marks})", chunk
                ):
                    blobs[key] = parse_blob(data)
                    found.append(key)
            if len(found) < len(pending):
                missing = sorted(set(pending) - set(found))
                raise StoreError(
                    f"the flowdbg database {self.path} lacks {len(missing)} stored value(s) "
                    f"(first {missing[0]!r}); it is damaged: prune the affected runs or pass "
                    "--db with another database"
                )
            pending = list(
                {child for key in found for child in child_keys(*blobs[key]) if child not in blobs}
            )
        return blobs

    def _values(self, conn: sqlite3.Connection, columns: Sequence[str | None]) -> list[Any]:
        entries = [_entry(column) for column in columns]
        blobs = self._load(conn, entries)
        # an inline entry was parsed just now: its value is already a fresh object
        return [
            entry if entry is None else entry[0] if type(entry) is list else build(entry, blobs)
            for entry in entries
        ]

    # -- runs --

    def _resolve(self, conn: sqlite3.Connection, run_id: str) -> tuple[Any, ...]:
        """The runs row of an id or unique prefix."""
        query = f"SELECT {_RUN_COLUMNS} FROM runs"
        row = conn.execute(f"{query} WHERE id = ?", (run_id,)).fetchone()
        if row is not None:
            return tuple(row)
        hint = "list runs with: flowdbg runs ls"
        if len(run_id) < _MIN_PREFIX:
            raise RunNotFound(
                f"no run {run_id!r} in {self.path}; give at least {_MIN_PREFIX} characters of a "
                f"run id ({hint})"
            )
        rows: list[Any] = []
        for prefix in dict.fromkeys((run_id, run_id.lower())):
            rows = conn.execute(
                f"{query} WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
                (prefix, _prefix_end(prefix)),
            ).fetchall()
            if rows:
                break
        if not rows:
            raise RunNotFound(f"no run {run_id!r} in {self.path}; {hint}")
        if len(rows) > 1:
            ids = ", ".join(repr(r[0]) for r in rows[:5]) + (" and more" if len(rows) > 5 else "")
            raise RunNotFound(
                f"run id prefix {run_id!r} is ambiguous in {self.path}: it matches {ids}; "
                "give more characters"
            )
        return tuple(rows[0])

    def _runs(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> list[RunRecord]:
        values = self._values(
            conn, [column for row in rows for column in (row[13], row[14], row[24], row[25])]
        )
        out: list[RunRecord] = []
        for index, row in enumerate(rows):
            status = row[6]
            if status == "running" and not _alive(row[17], row[18]):
                status = "interrupted"
            out.append(
                RunRecord(
                    run_id=row[0],
                    parent_run_id=row[1],
                    root_run_id=row[2],
                    parent_step=row[3],
                    name=row[4],
                    framework=row[5],
                    status=status,
                    started_at=row[7],
                    ended_at=row[8],
                    error=_error(row, 9),
                    input=values[4 * index],
                    output=values[4 * index + 1],
                    tags=_decode(row[15]),
                    path=_path(row[16]),
                    pid=row[17],
                    host=row[18],
                    step_count=row[19],
                    target=row[20],
                    origin=row[21],
                    forked_from=row[22],
                    fork_step=row[23],
                    config=values[4 * index + 2],
                    initial_state=values[4 * index + 3],
                )
            )
        return out

    def get_run(self, run_id: str) -> RunRecord:
        """See :meth:`Store.get_run`."""
        with self._read() as conn:
            return self._runs(conn, [self._resolve(conn, run_id)])[0]

    def list_runs(
        self,
        *,
        status: str | Sequence[str] | None = None,
        since: float | None = None,
        until: float | None = None,
        name: str | None = None,
        parent: str | None = None,
        limit: int | None = 50,
        framework: str | None = None,
    ) -> list[RunRecord]:
        """See :meth:`Store.list_runs`."""
        where: list[str] = []
        params: list[Any] = []
        if parent is None:
            where.append("parent IS NULL")
        elif parent != "*":
            where.append("parent = ?")
            params.append(parent)
        wanted: set[str] | None = None
        if status is not None:
            wanted = {status} if isinstance(status, str) else set(status)
            stored = (wanted - {"interrupted"}) | (
                {"running"} if "interrupted" in wanted else set()
            )
            if not stored:
                return []
            where.append(f"status IN ({', '.join('?' * len(stored))})")
            params.extend(sorted(stored))
        if since is not None:
            where.append("started_at >= ?")
            params.append(since)
        if until is not None:
            where.append("started_at <= ?")
            params.append(until)
        if name is not None:
            where.append("name GLOB ?")
            params.append(name)
        if framework is not None:
            where.append("framework = ?")
            params.append(framework)
        # "running" and "interrupted" are told apart only here, by asking the OS
        check = wanted is not None and ("running" in wanted) != ("interrupted" in wanted)
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY started_at DESC, id DESC"
        if limit is not None and not check:
            sql += f" LIMIT {max(int(limit), 0)}"
        with self._read() as conn:
            rows: list[Any] = []
            for row in conn.execute(sql, params):
                if limit is not None and len(rows) >= limit:
                    break
                if check and wanted is not None:
                    effective = row[6]
                    if effective == "running" and not _alive(row[17], row[18]):
                        effective = "interrupted"
                    if effective not in wanted:
                        continue
                rows.append(row)
            return self._runs(conn, rows)

    def list_forks(self, run_id: str) -> list[RunRecord]:
        """See :meth:`Store.list_forks`."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE forked_from = ? ORDER BY started_at, id",
                (run_id,),
            ).fetchall()
            return self._runs(conn, rows)

    # -- steps --

    def get_steps(
        self,
        run_id: str,
        *,
        node: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        from_step: int | None = None,
        to_step: int | None = None,
        values: bool = True,
    ) -> list[StepRecord]:
        """See :meth:`Store.get_steps`."""
        with self._read() as conn:
            rid = self._resolve(conn, run_id)[0]
            where = ["run_id = ?"]
            params: list[Any] = [rid]
            for column, value in (("node", node), ("kind", kind), ("status", status)):
                if value is not None:
                    where.append(f"{column} = ?")
                    params.append(value)
            if from_step is not None:
                where.append("step >= ?")
                params.append(from_step)
            if to_step is not None:
                where.append("step <= ?")
                params.append(to_step)
            rows = conn.execute(
                f"SELECT {_STEP_COLUMNS} FROM steps WHERE {' AND '.join(where)} ORDER BY step",
                params,
            ).fetchall()
            decoded: list[Any] = []
            if values:
                decoded = self._values(
                    conn, [c for row in rows for c in (row[17], row[18], row[19])]
                )
        out: list[StepRecord] = []
        for index, row in enumerate(rows):
            record = StepRecord(
                run_id=row[0],
                step=row[1],
                superstep=row[2],
                path=_path(row[3]),
                node=row[4],
                kind=row[5],
                status=row[6],
                started_at=row[7],
                ended_at=row[8],
                decision=None if row[10] is None else _decode(row[10]),
                error=_error(row, 11),
                branch=row[15],
                attempt=row[16],
                partial=bool(row[20]),
                child_run_id=row[21],
                cached=bool(row[22]),
            )
            if values:
                record.input, record.output, record.state = decoded[3 * index : 3 * index + 3]
            out.append(record)
        return out

    def _state_column(
        self, conn: sqlite3.Connection, rid: str, step: int | None
    ) -> tuple[int, str] | None:
        """``(step, state column)`` of the latest state at or before ``step``."""
        if step is not None:
            # two queries: SQLite answers each of min() and max() with one index lookup
            (low,) = conn.execute("SELECT min(step) FROM steps WHERE run_id = ?", (rid,)).fetchone()
            (high,) = conn.execute(
                "SELECT max(step) FROM steps WHERE run_id = ?", (rid,)
            ).fetchone()
            if low is None:
                raise StepNotFound(f"run {_short(rid)!r} has no steps; step {step} is out of range")
            if not low <= step <= high:
                raise StepNotFound(
                    f"run {_short(rid)!r} has steps {low}..{high}; step {step} is out of range"
                )
        sql = "SELECT step, state_ref FROM steps WHERE run_id = ? AND state_ref IS NOT NULL"
        params: list[Any] = [rid]
        if step is not None:
            enclosing = self._enclosing_unit(conn, rid, step)
            if enclosing is not None:
                # a call inside a unit whose calls write the run's state themselves (an agent's
                # tools; see Frame.calls_write_state) recorded the state after it: the latest
                # one its unit's calls recorded by then
                row = conn.execute(
                    sql + " AND step > ? AND step <= ? AND path = (SELECT path FROM steps "
                    "WHERE run_id = ? AND step = ?) ORDER BY step DESC LIMIT 1",
                    (rid, enclosing, step, rid, step),
                ).fetchone()
                if row is not None:
                    return row[0], row[1]
                # else a call (a tool, a model, an @task) sees the state its unit started
                # from: the state after the steps before it, or the state before the run's
                # first step (else the run's input)
                row = conn.execute(
                    sql + " AND step < ? ORDER BY step DESC LIMIT 1", (rid, enclosing)
                ).fetchone()
                if row is not None:
                    return row[0], row[1]
                initial_ref, input_ref = conn.execute(
                    "SELECT initial_ref, input_ref FROM runs WHERE id = ?", (rid,)
                ).fetchone()
                first = initial_ref if initial_ref is not None else input_ref
                return None if first is None else (0, first)
            sql += " AND step <= ?"
            params.append(step)
        row = conn.execute(sql + " ORDER BY step DESC LIMIT 1", params).fetchone()
        return None if row is None else (row[0], row[1])

    @staticmethod
    def _enclosing_unit(conn: sqlite3.Connection, rid: str, step: int) -> int | None:
        """The step of the run's own unit that ``step`` runs inside (a call it makes), or
        ``None`` when ``step`` is one of the run's own units."""
        found = conn.execute(
            "SELECT s.path, r.path FROM steps s JOIN runs r ON r.id = s.run_id "
            "WHERE s.run_id = ? AND s.step = ?",
            (rid, step),
        ).fetchone()
        if found is None or found[0] == found[1]:
            return None
        (enclosing,) = conn.execute(
            "SELECT step FROM steps WHERE run_id = ? AND step < ? AND path = ? "
            "ORDER BY step DESC LIMIT 1",
            (rid, step, found[1]),
        ).fetchone() or (None,)
        return enclosing

    def get_state(self, run_id: str, step: int | None = None) -> Any:
        """See :meth:`Store.get_state`."""
        with self._read() as conn:
            rid = self._resolve(conn, run_id)[0]
            found = self._state_column(conn, rid, step)
            if found is None:
                return None
            return self._values(conn, [found[1]])[0]

    def last_writers(self, run_id: str, step: int | None = None) -> dict[str, tuple[int, str]]:
        """See :meth:`Store.last_writers`."""
        with self._read() as conn:
            run = self._resolve(conn, run_id)
            rid = run[0]
            found = self._state_column(conn, rid, step)
            if found is None:
                return {}
            rows = conn.execute(
                "SELECT step, node, state_ref FROM steps WHERE run_id = ? AND step <= ? "
                "AND state_ref IS NOT NULL ORDER BY step",
                (rid, found[0]),
            ).fetchall()
            # the state before the first step (else the run's input): its keys were written by
            # no step
            baseline = _entry(run[25] if run[25] is not None else run[13])
            distinct = {column for _, _, column in rows}
            entries = {column: _entry(column) for column in distinct}
            blobs = self._dict_nodes(conn, [*entries.values(), baseline])
        previous = (None if baseline is None else top_level(baseline, blobs)) or {}
        writers: dict[str, tuple[int, str]] = {}
        last_column = None
        for number, node, column in rows:
            if column == last_column:
                continue
            last_column = column
            keys = top_level(entries[column], blobs) or {}
            for key, entry in keys.items():
                if previous.get(key, _ABSENT) != entry:
                    writers[key] = (number, node)
            for key in set(writers) - set(keys):
                del writers[key]
            previous = keys
        return writers

    def _dict_nodes(self, conn: sqlite3.Connection, entries: Iterable[Any]) -> dict[str, Any]:
        """The blobs of the top-level dict nodes of these entries (not the values below)."""
        blobs: dict[str, tuple[int, Any]] = {}
        pending = list({entry for entry in entries if type(entry) is str})
        while pending:
            found = []
            for chunk in _chunked(pending):
                marks = ", ".join("?" * len(chunk))
                for key, data in conn.execute(
                    f"SELECT hash, data FROM blobs WHERE hash IN ({marks})", chunk
                ):
                    blobs[key] = parse_blob(data)
                    found.append(key)
            pending = list(
                {
                    child
                    for key in found
                    if blobs[key][0] == ord("D")
                    for child in blobs[key][1]
                    if child not in blobs
                }
            )
        return blobs

    # -- diffs --

    def _diff_rows(self, run_id: str) -> list[DiffRow]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY step", (run_id,)
            ).fetchall()
        out = []
        for row in rows:
            step = StepRecord(
                run_id=row[0],
                step=row[1],
                superstep=row[2],
                path=_path(row[3]),
                node=row[4],
                kind=row[5],
                status=row[6],
                started_at=row[7],
                ended_at=row[8],
                error=_error(row, 11),
                branch=row[15],
                attempt=row[16],
            )
            out.append(DiffRow(step, row[19], row[18]))
        return out

    def _diff_value(self, token: Any) -> Any:
        if token is None:
            return None
        with self._read() as conn:
            return self._values(conn, [token])[0]

    # -- pruning --

    def prune(self, *, older_than: float | None = None, keep: int | None = None) -> int:
        """See :meth:`Store.prune`. Runs ``VACUUM`` afterwards to give the space back."""
        if older_than is None and keep is None:
            return 0
        with self._write() as conn:
            doomed: list[str] = []
            rows = conn.execute(
                "SELECT id, status, started_at, pid, host FROM runs WHERE parent IS NULL "
                "ORDER BY started_at DESC, id DESC"
            ).fetchall()
            for index, (rid, status, started_at, pid, host) in enumerate(rows):
                old = older_than is not None and started_at < older_than
                surplus = keep is not None and index >= keep
                if (old or surplus) and not (status == "running" and _alive(pid, host)):
                    doomed.append(rid)
            if not doomed:
                return 0
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS doomed (id TEXT PRIMARY KEY)")
            conn.execute("DELETE FROM temp.doomed")
            conn.executemany("INSERT OR IGNORE INTO temp.doomed VALUES (?)", [(r,) for r in doomed])
            conn.execute(
                """INSERT OR IGNORE INTO temp.doomed
                WITH RECURSIVE tree (id) AS (
                    SELECT id FROM temp.doomed
                    UNION SELECT runs.id FROM runs JOIN tree ON runs.parent = tree.id
                ) SELECT id FROM tree"""
            )
            conn.execute("DELETE FROM steps WHERE run_id IN (SELECT id FROM temp.doomed)")
            conn.execute("DELETE FROM runs WHERE id IN (SELECT id FROM temp.doomed)")
            conn.execute("DELETE FROM temp.doomed")
            self._sweep(conn)
            conn.execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'prune_generation'"
            )
        try:
            self._conn().execute("VACUUM")
        except sqlite3.OperationalError as exc:  # another connection is busy: space later
            log.info("flowdbg could not VACUUM %s after pruning: %s", self.path, exc)
        return len(doomed)

    def _sweep(self, conn: sqlite3.Connection) -> None:
        """Delete the blobs no remaining run or step reaches."""
        live: set[str] = set()
        roots = conn.execute(
            """SELECT DISTINCT ref FROM (
                SELECT input_ref AS ref FROM steps UNION ALL SELECT output_ref FROM steps
                UNION ALL SELECT state_ref FROM steps UNION ALL SELECT input_ref FROM runs
                UNION ALL SELECT output_ref FROM runs UNION ALL SELECT config_ref FROM runs
                UNION ALL SELECT initial_ref FROM runs
            ) WHERE substr(ref, 1, 1) = '"'"""
        )
        pending = [json.loads(ref) for (ref,) in roots]
        while pending:
            live.update(pending)
            found: list[str] = []
            for chunk in _chunked(pending):
                marks = ", ".join("?" * len(chunk))
                # plain values ('v') refer to nothing: their data need not be read
                for _, data in conn.execute(
                    f"SELECT hash, data FROM blobs WHERE hash IN ({marks}) "
                    "AND substr(data, 1, 1) != X'76'",
                    chunk,
                ):
                    found.extend(child_keys(*parse_blob(data)))
            pending = list(set(found) - live)
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS live (hash TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM temp.live")
        conn.executemany("INSERT INTO temp.live VALUES (?)", [(key,) for key in live])
        conn.execute("DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM temp.live)")
        conn.execute("DELETE FROM temp.live")


_ABSENT = object()
