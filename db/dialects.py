"""The few places where DuckDB and PostgreSQL differ. Nothing else in db/ branches on
the dialect.

- bulk candidate load: DuckDB inserts from a registered Arrow table (built from the
  DataFrame) in one statement (~1M rows/s); PostgreSQL uses COPY (hundreds of
  thousands of rows/s). SQLAlchemy executemany is 20–200x slower on both, so it is
  not used for candidates.
- frame reads: DuckDB returns a DataFrame natively (or, for big reads, an Arrow table
  converted column by column: ~4x faster than ``.df()`` on text columns, and text can
  come back dictionary-encoded as pandas categoricals); PostgreSQL rows are fetched
  through the driver cursor, and big (columnar) reads come as ``COPY ... TO STDOUT``
  CSV parsed by Arrow, with the dtypes DuckDB's columnar path gives.
- unique-violation detection for idempotent concurrent uploads.
- the median aggregate (:func:`median`): DuckDB's ``quantile_cont``, PostgreSQL's
  ordered-set ``percentile_cont ... WITHIN GROUP``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import sqlalchemy as sa
import sqlalchemy.ext.compiler


def is_duckdb(conn_or_engine: sa.Connection | sa.Engine) -> bool:
    return conn_or_engine.dialect.name == "duckdb"


# conn.info key of the small inserts held back until the shared transaction ends
_DEFERRED = "moedash_deferred_inserts"


@dataclasses.dataclass(frozen=True)
class CopyRows:
    """A frame as the Python rows PostgreSQL's COPY takes (:func:`copy_rows`), made
    before the insert (e.g. in a parse worker): ``columns`` and one tuple per row."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]

    def __len__(self) -> int:
        return len(self.rows)

    def with_first(self, name: str, value: Any) -> CopyRows:
        """The rows with a constant column ``name`` in front."""
        return CopyRows((name, *self.columns), [(value, *row) for row in self.rows])


def copy_rows(frame: pd.DataFrame) -> CopyRows:
    """``frame`` as :class:`CopyRows` (what :func:`bulk_insert_frame` sends to COPY)."""
    return CopyRows(tuple(frame.columns), _python_rows(frame))


def bulk_insert_frame(
    conn: sa.Connection, table: str, frame: pd.DataFrame | pa.Table | CopyRows
) -> None:
    """Insert every row of ``frame`` into ``table`` (columns matched by name) inside the
    connection's current transaction (inside :func:`deferred_inserts`: possibly at its
    end, together with the other frames for the same table). ``frame`` may already be
    in the form the dialect inserts (e.g. made in a parse worker): on DuckDB the Arrow
    table of :func:`arrow_or_frame`, on PostgreSQL the :func:`copy_rows`."""
    if isinstance(frame, CopyRows) and is_duckdb(conn):
        frame = pd.DataFrame(frame.rows, columns=list(frame.columns))
    elif isinstance(frame, pa.Table) and not is_duckdb(conn):
        frame = frame.to_pandas()
    if len(frame) == 0:
        return
    raw: Any = conn.connection.driver_connection
    if is_duckdb(conn):
        data = frame if isinstance(frame, pa.Table) else arrow_or_frame(frame)
        cols = list(data.column_names if isinstance(data, pa.Table) else data.columns)
        pending: dict[tuple[str, tuple[str, ...]], list[pa.Table]] | None = conn.info.get(_DEFERRED)
        if pending is not None and isinstance(data, pa.Table):
            pending.setdefault((table, tuple(cols)), []).append(data)
            return
        _duckdb_insert(raw, table, cols, data)
        return
    assert not isinstance(frame, pa.Table)
    copy_in = frame if isinstance(frame, CopyRows) else copy_rows(frame)
    col_sql = ", ".join(f'"{c}"' for c in copy_in.columns)
    rows = copy_in.rows
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({col_sql}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def insert_arrow(raw: Any, table: str, data: pa.Table) -> None:
    """Insert the rows of ``data`` into ``table`` through the DuckDB driver connection
    ``raw``, columns matched by name (one statement)."""
    _duckdb_insert(raw, table, list(data.column_names), data)


def _duckdb_insert(raw: Any, table: str, cols: list[str], data: pa.Table | pd.DataFrame) -> None:
    col_sql = ", ".join(f'"{c}"' for c in cols)
    view = "_moedash_bulk_in"
    raw.register(view, data)
    try:
        raw.execute(f"INSERT INTO {table} ({col_sql}) SELECT {col_sql} FROM {view}")
    except BaseException:
        # The failed insert aborted the transaction, so unregistering fails too;
        # the insert's own error is the one to report.
        with contextlib.suppress(Exception):
            raw.unregister(view)
        raise
    raw.unregister(view)


@contextlib.contextmanager
def deferred_inserts(conn: sa.Connection) -> Iterator[None]:
    """Inside the block, DuckDB's small :func:`bulk_insert_frame` inserts are held back
    and written when it ends, one statement per table for all of them (a shared
    transaction of several uploads, :mod:`db.group_commit`: each insert statement costs
    a fixed ~3 ms besides its rows). Still inside the caller's transaction: if the block
    or the combined insert fails, the transaction fails, nothing is stored. Nothing
    inside may read back what it inserted this way (the upload path does not)."""
    if not is_duckdb(conn) or _DEFERRED in conn.info:
        yield
        return
    pending: dict[tuple[str, tuple[str, ...]], list[pa.Table]] = {}
    conn.info[_DEFERRED] = pending
    try:
        yield
    finally:
        # conn.info lives as long as the pooled connection: never leave the key behind
        conn.info.pop(_DEFERRED, None)
    raw: Any = conn.connection.driver_connection
    for (table, cols), tables in pending.items():
        try:
            combined = pa.concat_tables(tables, promote_options="default")
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            for one in tables:  # columns that do not unify: one statement each
                _duckdb_insert(raw, table, list(cols), one)
            continue
        _duckdb_insert(raw, table, list(cols), combined)


# Frames up to this many rows go to DuckDB as Arrow (per-insert overhead dominates);
# bigger ones as the DataFrame itself: an Arrow copy of a 50k-row upload's frame would
# add ~50 MB at the peak of the biggest uploads (bench/upload_memory.py).
_ARROW_MAX_ROWS = 10_000


def arrow_or_frame(frame: pd.DataFrame) -> pa.Table | pd.DataFrame:
    """``frame`` as an Arrow table (one ``pa.array`` per column, pandas' null semantics:
    NaN is NULL, as DuckDB's own DataFrame scan treats it), which DuckDB inserts ~2x
    faster than it scans a small DataFrame with nullable/Arrow-backed columns; the frame
    itself when it is big (see :data:`_ARROW_MAX_ROWS`) or a column does not convert
    (mixed Python objects), for DuckDB's scan to decide."""
    if len(frame) > _ARROW_MAX_ROWS:
        return frame
    try:
        return pa.table({name: pa.array(frame[name]) for name in frame.columns})
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return frame


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


def read_frame(
    conn: sa.Connection,
    sql: str,
    params: Sequence[Any] = (),
    *,
    categorical: Collection[str] | None = None,
) -> pd.DataFrame:
    """Run a SELECT written with ``?`` placeholders and return a DataFrame.

    ``categorical=None`` (default): the driver's own conversion. Otherwise the read takes
    the columnar path (DuckDB: Arrow) with the dtypes DuckDB's ``.df()`` gives (int64 /
    bool, nullable ``Int64`` / ``boolean`` only when the column has NULLs, float64,
    ``str``), and the text columns named in ``categorical`` come back as pandas
    categoricals with sorted categories (missing values stay missing), exactly what
    ``.astype("category")`` would give, without building a Python string per row.
    """
    raw: Any = conn.connection.driver_connection
    if is_duckdb(conn):
        if categorical is None:
            return raw.execute(sql, list(params)).df()
        return arrow_to_frame(_duckdb_arrow(raw, sql, params), categorical)
    pg_sql = sql.replace("?", "%s")
    if categorical is not None:
        return arrow_to_frame(_postgres_arrow(raw, pg_sql, params, categorical), categorical)
    with raw.cursor() as cur:
        cur.execute(pg_sql, list(params))
        names = [d.name for d in cur.description]
        rows = cur.fetchall()
    return pd.DataFrame.from_records(rows, columns=names)


# PostgreSQL type OIDs of the columns our frames hold -> Arrow types (others: text).
_PG_ARROW = {
    16: pa.bool_(),
    20: pa.int64(),
    21: pa.int64(),
    23: pa.int64(),
    700: pa.float64(),
    701: pa.float64(),
    1700: pa.float64(),
}


def _postgres_arrow(
    raw: Any, sql: str, params: Sequence[Any], encode: Collection[str] = ()
) -> pa.Table:
    """The result of ``sql`` as an Arrow table through ``COPY (...) TO STDOUT`` in CSV,
    parsed by Arrow as it arrives: the rows never become Python objects (a 1M-row,
    16-column read took 5.5 s and +0.5 GB instead of 15 s and +1.7 GB through the
    cursor), and the CSV text is never held whole (16 MB blocks). The text columns named
    in ``encode`` are dictionary-encoded block by block (codes instead of a string per
    row). Column types come from the statement's own description; NULL is an unquoted
    empty field, an empty text a quoted one."""
    with raw.cursor() as cur:
        cur.execute(f"SELECT * FROM ({sql}) AS q LIMIT 0", list(params))
        names = [d.name for d in cur.description]
        types = {d.name: _PG_ARROW.get(d.type_code, pa.string()) for d in cur.description}
        empty = pa.table({n: pa.array([], type=types[n]) for n in names})
        with cur.copy(f"COPY ({sql}) TO STDOUT (FORMAT csv)", list(params)) as copy:
            stream = _CopyStream(iter(copy))
            if not stream.peek():
                return empty
            reader = pacsv.open_csv(
                io.BufferedReader(stream, 1 << 20),
                read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24),
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=pacsv.ConvertOptions(
                    column_types=types,
                    true_values=["t"],
                    false_values=["f"],
                    null_values=[""],
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                ),
            )
            batches = [_encode(batch, encode) for batch in reader]
    if not batches:
        return empty
    return pa.Table.from_batches(batches)


class _CopyStream(io.RawIOBase):
    """The chunks of a COPY ... TO STDOUT as a readable binary stream. A chunk is one
    row (libpq hands COPY data over a row at a time): they are taken
    :data:`_ROWS_PER_READ` at a time and joined in C (``islice`` + ``bytes.join``), so
    a 1M-row read makes a few hundred Python-level reads, not a million."""

    def __init__(self, chunks: Iterator[Any]) -> None:
        self._chunks = chunks
        self._buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def peek(self) -> int:
        """Bytes ready after reading chunks until some are not empty (0: the end)."""
        while not len(self._buf):
            rows = list(itertools.islice(self._chunks, _ROWS_PER_READ))
            if not rows:
                return 0
            self._buf = memoryview(b"".join(rows))
        return len(self._buf)

    def readinto(self, b: Any) -> int:
        n = min(len(b), self.peek())
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


# COPY rows joined per read of :class:`_CopyStream` (a few hundred KB of CSV)
_ROWS_PER_READ = 4096


def _encode(batch: pa.RecordBatch, encode: Collection[str]) -> pa.RecordBatch:
    """``batch`` with its text columns named in ``encode`` dictionary-encoded."""
    if not encode:
        return batch
    cols = [
        pc.dictionary_encode(col) if name in encode and pa.types.is_string(col.type) else col
        for name, col in zip(batch.schema.names, batch.columns, strict=True)
    ]
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def _duckdb_arrow(raw: Any, sql: str, params: Sequence[Any]) -> pa.Table:
    # ``sql(...)`` streams the result straight into Arrow; the DB-API ``execute(...)``
    # result would be materialised once more first.
    sql_fn = getattr(raw, "sql", None)
    if sql_fn is not None:
        try:
            return sql_fn(sql, params=list(params)).to_arrow_table()
        except TypeError:  # a wrapper without ``params=``
            pass
    return raw.execute(sql, list(params)).to_arrow_table()


def arrow_to_frame(table: pa.Table, categorical: Collection[str] = ()) -> pd.DataFrame:
    """Arrow table -> DataFrame with ``.df()``-compatible dtypes (see ``read_frame``)."""
    cats = set(categorical)
    out: dict[str, Any] = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        typ = col.type
        if pa.types.is_dictionary(typ):  # encoded as it was read (PostgreSQL)
            typ = typ.value_type
        text = (
            pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ)
        )
        if text and col.null_count == len(col):  # .df(): object column of None
            values = np.full(len(col), None, dtype=object)
            out[name] = pd.Categorical(values) if name in cats else values
        elif text and name in cats:
            out[name] = _categorical(col)
        elif (pa.types.is_integer(typ) or pa.types.is_boolean(typ)) and col.null_count:
            mapper = {pa.bool_(): pd.BooleanDtype()}.get(typ) or pd.Int64Dtype()
            out[name] = col.to_pandas(types_mapper=lambda _t, m=mapper: m)
        else:
            out[name] = col.to_pandas()
    return pd.DataFrame(out, copy=False) if out else pd.DataFrame(columns=table.column_names)


def _categorical(col: pa.ChunkedArray) -> pd.Categorical:
    """Text column -> Categorical with sorted categories (as ``astype("category")``)."""
    if pa.types.is_dictionary(col.type):  # encoded as it was read
        encoded = col
    else:
        encoded = pc.dictionary_encode(col if col.type == pa.string() else col.cast(pa.string()))
    # Encoded chunk by chunk: give every chunk the same dictionary.
    enc = pa.table({"c": encoded}).unify_dictionaries().column(0)
    if enc.num_chunks:
        values = enc.chunk(0).dictionary.to_numpy(zero_copy_only=False).astype(object)
        codes = np.concatenate(
            [
                np.asarray(c.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int32)
                for c in enc.chunks
            ]
        )
    else:
        values, codes = np.zeros(0, dtype=object), np.zeros(0, dtype=np.int32)
    order = np.argsort(values, kind="stable") if len(values) else np.zeros(0, np.int64)
    remap = np.empty(len(values) + 1, dtype=np.int32)
    remap[order] = np.arange(len(values), dtype=np.int32)
    remap[-1] = -1  # code -1 (missing) stays missing
    dtype = pd.CategoricalDtype(pd.Index(values[order], dtype="str"))
    return pd.Categorical.from_codes(remap[codes], dtype=dtype)


def median(column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """The median of ``column`` as an aggregate (interpolated: the mean of the two middle
    values for an even count; NULLs ignored), written for the dialect the statement is
    compiled for: ``quantile_cont(x, 0.5)`` on DuckDB, ``percentile_cont(0.5) WITHIN
    GROUP (ORDER BY x)`` on PostgreSQL."""
    return _Median(column)


class _Median(sa.sql.functions.GenericFunction[Any]):
    """``median(x)`` compiled per dialect (see :func:`median`)."""

    name = "moedash_median"
    inherit_cache = True
    type = sa.Float(precision=53)


@sa.ext.compiler.compiles(_Median, "duckdb")
def _median_duckdb(element: _Median, compiler: Any, **kw: Any) -> str:
    (arg,) = element.clauses
    return f"quantile_cont({compiler.process(arg, **kw)}, 0.5)"


@sa.ext.compiler.compiles(_Median)
def _median_default(element: _Median, compiler: Any, **kw: Any) -> str:
    (arg,) = element.clauses
    return f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {compiler.process(arg, **kw)})"


def is_unique_violation(exc: BaseException) -> bool:
    """True when a database error says a unique/primary-key constraint was violated."""
    text = str(getattr(exc, "orig", exc)).lower()
    if "could not set lock" in text:  # DuckDB's "Conflicting lock is held": not a key
        return False
    return (
        "unique" in text
        or "duplicate key" in text
        or "primary key" in text
        or "conflict" in text  # DuckDB: "Transaction conflict" on concurrent same-key writes
    )


_LOCK = re.compile(
    r'could not set lock on file "(?P<path>[^"]+)".*?held in (?P<prog>.+?) \(PID (?P<pid>\d+)\)',
    re.IGNORECASE | re.DOTALL,
)


def lock_holder(exc: BaseException) -> tuple[str, str, int] | None:
    """``(file, program, pid)`` when a DuckDB error says another process holds the file's
    lock (DuckDB's text names the holder: "Conflicting lock is held in <prog> (PID n)"),
    else None."""
    match = _LOCK.search(str(getattr(exc, "orig", exc)))
    if match is None:
        return None
    return match["path"], match["prog"].strip(), int(match["pid"])


def plain_scalar(value: Any) -> Any:
    """Store-ready scalar: numpy/pandas scalars and NA become Python values/None."""
    if value is None:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):
        return value.item()
    return value
