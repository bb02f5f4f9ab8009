"""The few places where DuckDB and PostgreSQL differ. Nothing else in db/ branches on
the dialect.

- bulk candidate load: DuckDB inserts from a registered DataFrame in one statement
  (~1M rows/s); PostgreSQL uses COPY (hundreds of thousands of rows/s). SQLAlchemy
  executemany is 20–200x slower on both, so it is not used for candidates.
- frame reads: DuckDB returns a DataFrame natively; PostgreSQL rows are fetched through
  the driver cursor.
- unique-violation detection for idempotent concurrent uploads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa


def is_duckdb(conn_or_engine: sa.Connection | sa.Engine) -> bool:
    return conn_or_engine.dialect.name == "duckdb"


def bulk_insert_frame(conn: sa.Connection, table: str, frame: pd.DataFrame) -> None:
    """Insert every row of ``frame`` into ``table`` (columns matched by name) inside the
    connection's current transaction."""
    if frame.empty:
        return
    cols = list(frame.columns)
    col_sql = ", ".join(f'"{c}"' for c in cols)
    raw: Any = conn.connection.driver_connection
    if is_duckdb(conn):
        view = "_moedash_bulk_in"
        raw.register(view, frame)
        try:
            raw.execute(f"INSERT INTO {table} ({col_sql}) SELECT {col_sql} FROM {view}")
        finally:
            raw.unregister(view)
        return
    rows = _python_rows(frame)
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({col_sql}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _python_rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows as tuples of plain Python values with None for every missing value."""
    columns: list[list[Any]] = []
    for name in frame.columns:
        series = frame[name]
        values = series.to_numpy(dtype=object, na_value=None)
        if series.dtype.kind == "f":
            values = np.where(pd.isna(series.to_numpy()), None, values)
        columns.append(values.tolist())
    return list(zip(*columns, strict=True))


def read_frame(conn: sa.Connection, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    """Run a SELECT written with ``?`` placeholders and return a DataFrame."""
    raw: Any = conn.connection.driver_connection
    if is_duckdb(conn):
        return raw.execute(sql, list(params)).df()
    pg_sql = sql.replace("?", "%s")
    with raw.cursor() as cur:
        cur.execute(pg_sql, list(params))
        names = [d.name for d in cur.description]
        rows = cur.fetchall()
    return pd.DataFrame.from_records(rows, columns=names)


def is_unique_violation(exc: BaseException) -> bool:
    """True when a database error says a unique/primary-key constraint was violated."""
    text = str(getattr(exc, "orig", exc)).lower()
    return (
        "unique" in text
        or "duplicate key" in text
        or "primary key" in text
        or "conflict" in text  # DuckDB: "Transaction conflict" on concurrent same-key writes
    )
