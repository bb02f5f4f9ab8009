"""Shared answers: what one replica computed for a cell version, for every replica to read.

Table ``answers`` (revision 0008): one row per (``kind``, ``params``) -- an answer's name
and a digest of its parameters -- holding the ``version`` of the cells it was computed
from, the cells' keys (``cells``, for :meth:`AnswerRepository.forget_cells`) and an
opaque ``payload`` (the service layer's encoding; this module never looks inside).

Contract
- ``get`` returns the payload only when the stored row was computed on ``version``; a
  row of an older version is as good as absent (it is replaced by the next ``put``).
- ``put`` replaces the row of (kind, params) whatever version it held; two replicas
  putting at once is fine (the last one wins; both computed the same answer). Payloads
  larger than ``max_bytes`` are not stored (returns False): the table stays small.
- ``forget_cells`` drops every row that read one of the given cells (a deleted run).
- ``computing`` is a single flight across replicas (PostgreSQL): while one replica
  computes (kind, params, version) it holds a session advisory lock named by them;
  another replica asking for the same answer waits (polling, at most ``wait_s``) until
  that lock is free, then reads what was stored instead of computing it again. On
  DuckDB (one process) it holds nothing.
- Every database failure raises :class:`~db.errors.StoreError`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from db import schema
from db.errors import UniqueViolation
from db.session import Database

# Payloads above this are not shared (an answer that large is cheaper to recompute
# than to ship to every replica, and the table must stay far below the store).
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
POLL_S = 0.25  # how often a replica waiting for another's computation looks again


def lock_key(kind: str, params: str, version: str) -> int:
    """The advisory lock (a signed 64-bit integer) named by an answer's identity."""
    digest = hashlib.blake2b(f"{kind}\0{params}\0{version}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class AnswerRepository:
    """The ``answers`` table."""

    def __init__(self, db: Database, max_bytes: int = MAX_PAYLOAD_BYTES) -> None:
        self._db = db
        self.max_bytes = max_bytes

    def get(self, kind: str, params: str, version: str) -> bytes | None:
        """The payload of (kind, params) computed on ``version``, else None."""
        a = schema.answers
        stmt = sa.select(a.c.payload).where(
            a.c.kind == kind, a.c.params == params, a.c.version == version
        )
        with self._db.read("get_answer", single=True) as conn:
            row = conn.execute(stmt).first()
        return None if row is None else bytes(row[0])

    def put(
        self, kind: str, params: str, version: str, cells: Iterable[str], payload: bytes
    ) -> bool:
        """Store ``payload`` as the answer (kind, params) of ``version``, replacing any
        other version's; False (nothing written) when it exceeds ``max_bytes``."""
        if len(payload) > self.max_bytes:
            return False
        a = schema.answers
        row = {
            "kind": kind,
            "params": params,
            "version": version,
            "cells": "\n".join(sorted(set(cells))),
            "created_at": dt.datetime.now(dt.UTC),
            "size_bytes": len(payload),
            "payload": payload,
        }
        for attempt in range(2):
            try:
                with self._db.write("put_answer") as conn:
                    conn.execute(sa.delete(a).where(a.c.kind == kind, a.c.params == params))
                    conn.execute(sa.insert(a).values(**row))
                return True
            except UniqueViolation:  # another replica stored it meanwhile: try once more
                if attempt:
                    return False
        return False

    @contextmanager
    def computing(
        self, kind: str, params: str, version: str, wait_s: float, *, hold: bool = True
    ) -> Iterator[bool]:
        """Hold the single-flight lock of (kind, params, version) around the block (see
        the module's contract). Yields True when this caller waited for another
        replica's computation (the answer is then most likely stored: read it first),
        False when it waited for nobody or gave up after ``wait_s`` (then it computes
        without the lock). ``hold=False``: wait for a computation under way but do not
        hold the lock (a caller that will not store its answer must not make others
        wait for it). The lock lives on its own autocommit connection, released when
        the block ends (and by the server if the connection dies)."""
        if self._db.dialect != "postgresql":
            yield False
            return
        key, waited = lock_key(kind, params, version), False
        deadline = time.monotonic() + max(wait_s, 0.0)
        conn = self._try_lock(key)
        while conn is None and time.monotonic() < deadline:  # no connection held meanwhile
            waited = True
            time.sleep(POLL_S)
            conn = self._try_lock(key)
        if conn is not None and not hold:
            self._unlock(conn, key)
            conn = None
        try:
            yield waited
        finally:
            if conn is not None:
                self._unlock(conn, key)

    def _try_lock(self, key: int) -> sa.Connection | None:
        """An autocommit connection holding the advisory lock ``key``, or None (another
        session holds it)."""
        with self._db.translating("answer_lock", writing=False):
            conn = self._db.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            try:
                if conn.execute(sa.select(sa.func.pg_try_advisory_lock(key))).scalar():
                    return conn
            except BaseException:
                conn.close()
                raise
            conn.close()
            return None

    @staticmethod
    def _unlock(conn: sa.Connection, key: int) -> None:
        try:
            conn.execute(sa.select(sa.func.pg_advisory_unlock(key)))
        except sa.exc.DBAPIError:  # the server releases it with the session
            conn.invalidate()
        finally:
            conn.close()

    def forget_cells(self, cell_keys: Iterable[str]) -> int:
        """Delete the answers computed from any of ``cell_keys``; returns how many."""
        keys = sorted(set(cell_keys))
        if not keys:
            return 0
        a = schema.answers
        # cells is a newline-joined list: match a whole line
        cond = sa.or_(
            *(
                sa.or_(
                    a.c.cells == k,
                    a.c.cells.startswith(k + "\n", autoescape=True),
                    a.c.cells.endswith("\n" + k, autoescape=True),
                    a.c.cells.contains("\n" + k + "\n", autoescape=True),
                )
                for k in keys
            )
        )
        with self._db.write("forget_answers") as conn:
            return int(conn.execute(sa.delete(a).where(cond)).rowcount or 0)

    def listing(self) -> list[tuple[str, str]]:
        """(kind, version) of every stored answer, by kind."""
        a = schema.answers
        stmt = sa.select(a.c.kind, a.c.version).order_by(a.c.kind, a.c.params)
        with self._db.read("list_answers", single=True) as conn:
            return [(str(k), str(v)) for k, v in conn.execute(stmt).all()]

    def summary(self) -> tuple[int, int]:
        """(rows, payload bytes) stored."""
        a = schema.answers
        stmt = sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(a.c.size_bytes), 0))
        with self._db.read("answers_summary", single=True) as conn:
            n, size = conn.execute(stmt).one()
        return int(n), int(size)
