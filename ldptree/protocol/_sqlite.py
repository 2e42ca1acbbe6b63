"""Opening the protocol's SQLite files (a collector's store, a holder's ledger) safely.

Each kind of file carries its own ``PRAGMA application_id``. A file is opened only if it is an
SQLite database of that kind, or an SQLite database holding nothing at all (a file whose
creation was interrupted before its first transaction committed); anything else is refused with
a ``ValueError`` before a single byte of it is written. Connections run in autocommit mode
(``isolation_level=None``): every transaction is begun and ended explicitly by the caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SQLITE_MAGIC", "connect", "is_sqlite", "prepare"]

#: The first 16 bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` is an SQLite 3 database file (an empty file counts: SQLite reads it as
    an empty database)."""
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    return head in (b"", SQLITE_MAGIC)


def connect(target: str | Path, what: str, *, timeout: float = 0.0) -> sqlite3.Connection:
    """A connection in autocommit mode that ``fsync``s every commit (``synchronous=FULL``);
    ``ValueError`` naming ``what`` when ``target`` is an existing file that is not an SQLite
    database (it is not opened)."""
    if str(target) != ":memory:" and Path(target).exists() and not is_sqlite(Path(target)):
        raise ValueError(f"{what} is not an SQLite database; it was not touched")
    try:
        conn = sqlite3.connect(target, isolation_level=None, timeout=timeout)
    except sqlite3.Error as err:  # e.g. a folder that does not exist
        raise ValueError(f"{what} cannot be opened ({err})") from None
    try:
        conn.execute("PRAGMA synchronous=FULL")
    except sqlite3.DatabaseError as err:
        conn.close()
        raise ValueError(f"{what} is not a readable SQLite database ({err})") from None
    return conn


def prepare(
    conn: sqlite3.Connection, application_id: int, schema: Sequence[str], what: str
) -> bool:
    """Check that ``conn``'s database is of kind ``application_id``, creating it from ``schema``
    (SQL statements, run in one transaction) when it holds nothing yet. Returns ``True`` when it
    was created. ``ValueError`` naming ``what`` for any other database."""
    try:
        found = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.DatabaseError as err:
        raise ValueError(f"{what} is not an SQLite database ({err})") from None
    if found == application_id:
        return False
    if found != 0 or tables != 0:
        raise ValueError(f"{what} is an SQLite database of another application; not touched")
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in schema:
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id={int(application_id)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return True
