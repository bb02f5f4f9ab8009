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
- Every database failure raises :class:`~db.errors.StoreError`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import sqlalchemy as sa

from db import schema
from db.errors import UniqueViolation
from db.session import Database

# Payloads above this are not shared (an answer that large is cheaper to recompute
# than to ship to every replica, and the table must stay far below the store).
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024


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
