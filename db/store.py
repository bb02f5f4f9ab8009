"""The store: the only interface the rest of moedash uses to read and write data.

One SQLAlchemy implementation serves DuckDB (``duckdb:///path/file.duckdb``, the
embedded default) and PostgreSQL (``postgresql://…``); the URL decides. ORM/Row
objects never leave this package: callers get the dataclasses below or DataFrames whose
columns are named in ``analysis.columns``.

Contract
- ``ingest`` is atomic (one transaction: the upload, its runs and all their candidates
  land together or not at all, also if the process dies midway) and idempotent: the
  identity of an upload is the SHA-256 of its bytes. Sending the same bytes again, also
  concurrently, returns the existing runs with ``already_existed=True`` and writes
  nothing. The same bytes with different upload metadata raise :class:`Conflict`.
- Lookups of a missing run raise :class:`NotFound`.
- Lists are ordered newest first (descending run_id); candidate lists by
  candidate_index ascending unless ``order`` says otherwise.
- ``candidate_frame`` returns the same rows, columns and values on both dialects;
  ``categorical=True`` only changes how text columns are held (pandas categoricals with
  sorted categories), which is what big analysis reads should ask for.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa
import zstandard

from analysis import columns as C
from db import dialects, migrations, schema, tokens
from db.crossval_store import CrossvalStoreMixin
from db.dialects import plain_scalar as _plain
from db.errors import Conflict, NotFound, StoreError
from db.tokens import TokenInfo
from ingest.records import RUN_EXTRA_KEYS, Sweep, UploadMeta

# Upload metadata fields compared when the same bytes arrive twice.
_META_FIELDS = tuple(f.name for f in dataclasses.fields(UploadMeta) if f.name != "filename")
# Text columns (what ``candidate_frame(categorical=True)`` makes categorical).
_TEXT_COLUMNS = frozenset(
    c
    for c in (*C.RUN_COLUMNS, *C.CANDIDATE_COLUMNS)
    if c not in (*C.INT_COLUMNS, *C.FLOAT_COLUMNS, *C.BOOL_COLUMNS, C.RUN_ID)
)
# Candidate columns a list/filter may order by.
_ORDERABLE = frozenset(C.CANDIDATE_COLUMNS) - {C.PER_RANK_JSON, C.EXTRA_JSON}


@dataclasses.dataclass(frozen=True)
class RunRef:
    run_id: int
    sweep_key: str
    n_candidates: int
    created: bool = True


@dataclasses.dataclass(frozen=True)
class IngestResult:
    upload_id: int
    sha256: str
    already_existed: bool
    runs: tuple[RunRef, ...]

    @property
    def n_candidates(self) -> int:
        return sum(r.n_candidates for r in self.runs)


@dataclasses.dataclass(frozen=True)
class Page:
    items: pd.DataFrame
    total: int
    limit: int
    offset: int


@dataclasses.dataclass(frozen=True)
class RawUpload:
    upload_id: int
    filename: str | None
    source_format: str
    content: bytes


def _normalise_url(url: str) -> str:
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str) -> sa.Engine:
    """Engine for a database URL. DuckDB files get their parent directory created."""
    url = _normalise_url(url)
    if url.startswith("duckdb:"):
        path = url.split(":///", 1)[1] if ":///" in url else ""
        if not path or path.startswith(":memory:"):
            raise StoreError(
                "database_url: in-memory DuckDB gives each pooled connection its own empty "
                "database; use a file, e.g. duckdb:///var/moedash.duckdb"
            )
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        return sa.create_engine(url, pool_size=8, max_overflow=8)
    if url.startswith("postgresql"):
        return sa.create_engine(url, pool_size=5, max_overflow=10, pool_pre_ping=True)
    raise StoreError(
        f"database_url: unsupported scheme in {url!r} (use duckdb:/// or postgresql://)"
    )


def open_store(url: str, *, upgrade: bool = True) -> Store:
    """Open (and by default create/upgrade) the store at ``url``."""
    store = Store(make_engine(url))
    if upgrade:
        store.upgrade()
    return store


class Store(CrossvalStoreMixin):
    """Runs, candidates, raw uploads and API tokens in one SQL database."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        # DuckDB is one process by design; concurrent writers inside it conflict on the
        # same keys instead of waiting, so writes are serialised here.
        self._write_lock = threading.Lock() if dialects.is_duckdb(engine) else None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        self.engine.dispose()

    def upgrade(self) -> int:
        """Create or upgrade the schema; return its version."""
        return migrations.upgrade(self.engine)

    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        """One write transaction: commit on success, roll back on any error."""
        if self._write_lock is None:
            with self.engine.begin() as conn:
                yield conn
            return
        with self._write_lock, self.engine.begin() as conn:
            yield conn

    # ------------------------------------------------------------------ ingest
    def ingest(
        self,
        sweeps: Sequence[Sweep],
        raw: bytes,
        meta: UploadMeta,
        *,
        uploaded_by: str | None = None,
    ) -> IngestResult:
        """Store one upload (its raw bytes, compressed) and every sweep parsed from it.

        Idempotent on the SHA-256 of ``raw``; atomic; see the module docstring.
        """
        if not sweeps:
            raise StoreError("ingest: nothing to store (no sweeps)")
        sha = hashlib.sha256(raw).hexdigest()
        existing = self._existing_upload(sha, meta)
        if existing is not None:
            return existing
        keys = [sweep_fingerprint(s) for s in sweeps]
        for attempt in range(2):
            try:
                with self._write() as conn:
                    return self._insert_upload(conn, sha, sweeps, keys, raw, meta, uploaded_by)
            except sa.exc.DBAPIError as exc:
                if not dialects.is_unique_violation(exc) or attempt:
                    raise StoreError(f"ingest failed: {exc.orig}") from exc
                # A concurrent upload of the same bytes or runs won the race: look again.
                again = self._existing_upload(sha, meta)
                if again is not None:
                    return again
        raise AssertionError("unreachable")

    def _existing_upload(self, sha: str, meta: UploadMeta) -> IngestResult | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(schema.uploads.c.upload_id, schema.uploads.c.meta_json).where(
                    schema.uploads.c.sha256 == sha
                )
            ).first()
            if row is None:
                return None
            upload_id, meta_json = int(row[0]), json.loads(row[1])
            for name in _META_FIELDS:
                new = getattr(meta, name)
                if new is not None and meta_json.get(name) != new:
                    raise Conflict(
                        name,
                        f"these bytes were already uploaded (upload {upload_id}) with "
                        f"{name}={meta_json.get(name)!r}, not {new!r}; delete those runs "
                        "first to store them again with other metadata",
                    )
            refs = conn.execute(
                sa.select(schema.runs.c.run_id, schema.runs.c.sweep_key, schema.runs.c.n_candidates)
                .where(schema.runs.c.upload_id == upload_id)
                .order_by(schema.runs.c.run_id)
            ).all()
        return IngestResult(
            upload_id=upload_id,
            sha256=sha,
            already_existed=True,
            runs=tuple(RunRef(int(r[0]), str(r[1]), int(r[2])) for r in refs),
        )

    def _insert_upload(
        self,
        conn: sa.Connection,
        sha: str,
        sweeps: Sequence[Sweep],
        keys: Sequence[str],
        raw: bytes,
        meta: UploadMeta,
        uploaded_by: str | None,
    ) -> IngestResult:
        r = schema.runs
        found = {
            row[0]: row
            for row in conn.execute(
                sa.select(
                    r.c.run_key, r.c.run_id, r.c.sweep_key, r.c.n_candidates, r.c.upload_id
                ).where(r.c.run_key.in_(list(keys)))
            ).all()
        }
        if len(found) == len(set(keys)):
            # Every sweep is already stored (e.g. NVIDIA's CSVs after their data.js):
            # same content in other bytes. Nothing is written.
            rows = [found[k] for k in keys]
            return IngestResult(
                upload_id=int(rows[0][4]),
                sha256=sha,
                already_existed=True,
                runs=tuple(RunRef(int(x[1]), str(x[2]), int(x[3]), created=False) for x in rows),
            )
        now = dt.datetime.now(dt.UTC)
        upload_id = conn.execute(
            schema.uploads.insert()
            .values(
                sha256=sha,
                filename=meta.filename,
                source_format=str(sweeps[0].run.get(C.SOURCE_FORMAT)),
                size_bytes=len(raw),
                compression="zstd",
                content=zstandard.ZstdCompressor(level=3).compress(raw),
                meta_json=json.dumps(dataclasses.asdict(meta), sort_keys=True),
                uploaded_by=uploaded_by,
                uploaded_at=now,
            )
            .returning(schema.uploads.c.upload_id)
        ).scalar_one()
        refs: list[RunRef] = []
        new: dict[str, RunRef] = {}
        for sweep, key in zip(sweeps, keys, strict=True):
            if key in found:
                old = found[key]
                refs.append(RunRef(int(old[1]), str(old[2]), int(old[3]), created=False))
                continue
            if key in new:  # the same sweep twice inside one upload
                refs.append(dataclasses.replace(new[key], created=False))
                continue
            run_id = self._insert_run(conn, int(upload_id), key, sweep, now)
            frame = sweep.candidates.copy(deep=False)
            frame.insert(0, C.RUN_ID, run_id)
            dialects.bulk_insert_frame(conn, "candidates", frame)
            new[key] = RunRef(run_id, sweep.key, len(sweep.candidates))
            refs.append(new[key])
        return IngestResult(int(upload_id), sha, False, tuple(refs))

    def _insert_run(
        self, conn: sa.Connection, upload_id: int, run_key: str, sweep: Sweep, now: dt.datetime
    ) -> int:
        status = sweep.candidates[C.STATUS]
        values: dict[str, Any] = {
            "upload_id": upload_id,
            "run_key": run_key,
            "sweep_key": sweep.key,
            "n_candidates": len(sweep.candidates),
            "n_success": int((status == "success").sum()),
            "n_failed": int((status == "failed").sum()),
            "n_skipped": int((status == "skipped").sum()),
            "created_at": now,
        }
        for name in (*C.RUN_COLUMNS, *RUN_EXTRA_KEYS):
            if name != C.RUN_ID:
                values[name] = _plain(sweep.run.get(name))
        run_id = conn.execute(
            schema.runs.insert().values(**values).returning(schema.runs.c.run_id)
        ).scalar_one()
        return int(run_id)

    # ------------------------------------------------------------------ runs
    def list_runs(
        self,
        *,
        model: str | None = None,
        hardware: str | None = None,
        quant: str | None = None,
        world_size: int | None = None,
        source_format: str | None = None,
        synthetic: bool | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        """Run summaries (no JSON blobs), newest first, with the total before paging."""
        r = schema.runs
        conds = _equals(
            r,
            model=model,
            hardware=hardware,
            quant=quant,
            world_size=world_size,
            source_format=source_format,
            synthetic=synthetic,
        )
        blobs = {c.name for c in r.columns if c.name.endswith("_json")}
        cols = [c for c in r.columns if c.name not in blobs]
        with self.engine.connect() as conn:
            total = conn.execute(sa.select(sa.func.count()).select_from(r).where(*conds)).scalar()
            rows = conn.execute(
                sa.select(*cols)
                .where(*conds)
                .order_by(r.c.run_id.desc())
                .limit(limit)
                .offset(offset)
            ).all()
        items = pd.DataFrame([dict(row._mapping) for row in rows], columns=[c.name for c in cols])
        return Page(items, int(total or 0), limit, offset)

    def get_run(self, run_id: int) -> dict[str, Any]:
        """Every stored field of one run plus its upload's metadata; the JSON blobs
        (``model_json`` …) are decoded into ``result["blocks"]["model"]`` etc."""
        r, u = schema.runs, schema.uploads
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(
                    r, u.c.filename, u.c.sha256, u.c.size_bytes, u.c.uploaded_at, u.c.uploaded_by
                )
                .join(u, u.c.upload_id == r.c.upload_id)
                .where(r.c.run_id == run_id)
            ).first()
        if row is None:
            raise NotFound("run", run_id)
        out = dict(row._mapping)
        # Decoded JSON blobs live under "blocks" (model, environment, search, ...) so
        # they never shadow the flat run columns of the same name.
        out["blocks"] = {
            key[: -len("_json")]: json.loads(out.pop(key))
            for key in list(out)
            if key.endswith("_json") and isinstance(out[key], str)
        }
        return out

    def raw_upload(self, run_id: int) -> RawUpload:
        """The original bytes of the upload a run came from."""
        r, u = schema.runs, schema.uploads
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(u.c.upload_id, u.c.filename, u.c.source_format, u.c.content)
                .join(r, r.c.upload_id == u.c.upload_id)
                .where(r.c.run_id == run_id)
            ).first()
        if row is None:
            raise NotFound("run", run_id)
        content = zstandard.ZstdDecompressor().decompress(bytes(row[3]))
        return RawUpload(int(row[0]), row[1], str(row[2]), content)

    def delete_run(self, run_id: int) -> None:
        """Delete a run and its candidates; its upload too once no run refers to it."""
        r, u = schema.runs, schema.uploads
        with self._write() as conn:
            upload_id = conn.execute(sa.select(r.c.upload_id).where(r.c.run_id == run_id)).scalar()
            if upload_id is None:
                raise NotFound("run", run_id)
            conn.execute(schema.candidates.delete().where(schema.candidates.c.run_id == run_id))
            conn.execute(r.delete().where(r.c.run_id == run_id))
            left = conn.execute(
                sa.select(sa.func.count()).select_from(r).where(r.c.upload_id == upload_id)
            ).scalar()
            if not left:
                conn.execute(u.delete().where(u.c.upload_id == upload_id))

    # ------------------------------------------------------------------ candidates
    def list_candidates(
        self,
        run_id: int,
        *,
        filters: dict[str, Any] | None = None,
        order: str = C.CANDIDATE_INDEX,
        descending: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> Page:
        """Candidates of one run. ``filters`` maps candidate column names to a value
        (equality; a list means any of). Raises NotFound for a missing run and
        ValueError naming an unknown filter/order column."""
        self.get_run_exists(run_id)
        c = schema.candidates
        conds = [c.c.run_id == run_id, *_filter_conditions(c, filters or {})]
        if order not in _ORDERABLE:
            raise ValueError(f"order: unknown column {order!r}")
        key = c.c[order].desc() if descending else c.c[order].asc()
        with self.engine.connect() as conn:
            total = conn.execute(sa.select(sa.func.count()).select_from(c).where(*conds)).scalar()
            rows = conn.execute(
                sa.select(c)
                .where(*conds)
                .order_by(key.nulls_last(), c.c.candidate_index)
                .limit(limit)
                .offset(offset)
            ).all()
        items = pd.DataFrame([dict(row._mapping) for row in rows], columns=list(c.columns.keys()))
        return Page(items, int(total or 0), limit, offset)

    def get_run_exists(self, run_id: int) -> None:
        """Raise NotFound unless the run exists."""
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(schema.runs.c.run_id).where(schema.runs.c.run_id == run_id)
            ).first()
        if found is None:
            raise NotFound("run", run_id)

    def candidate_frame(
        self,
        *,
        run_ids: Sequence[int] | None = None,
        filters: dict[str, Any] | None = None,
        success_only: bool = False,
        columns: Sequence[str] | None = None,
        categorical: bool = False,
    ) -> pd.DataFrame:
        """Candidates joined with their run's facts (``analysis.columns.RUN_COLUMNS``).

        ``filters`` may name run or candidate columns (equality; list = any of).
        ``columns`` restricts the candidate columns returned (run columns always come).
        ``categorical=True`` returns every text column (run and candidate) as a pandas
        categorical with sorted categories -- the same values, a fraction of the memory
        and much faster to read for big frames; otherwise text columns are ``str``.
        Integer and boolean columns are numpy ``int64`` / ``bool``, or nullable ``Int64``
        / ``boolean`` when the returned rows hold a NULL; float columns are ``float64``.
        Rows are ordered by run_id, candidate_index.
        """
        cand_cols = list(columns) if columns else list(C.CANDIDATE_COLUMNS)
        unknown = [x for x in cand_cols if x not in C.CANDIDATE_COLUMNS]
        if unknown:
            raise ValueError(f"columns: unknown candidate column(s) {unknown}")
        run_where: list[str] = ["1=1"]
        cand_where: list[str] = ["1=1"]
        run_params: list[Any] = []
        cand_params: list[Any] = []
        for name, value in (filters or {}).items():
            if name in C.RUN_COLUMNS:
                where, params = run_where, run_params
            elif name in C.CANDIDATE_COLUMNS:
                where, params = cand_where, cand_params
            else:
                raise ValueError(f"filters: unknown column {name!r}")
            values = value if isinstance(value, list | tuple) else [value]
            where.append(f'"{name}" IN ({", ".join("?" for _ in values)})')
            params.extend(values)
        if run_ids is not None:
            ids = [int(x) for x in run_ids] or [-1]
            run_where.append(f'"run_id" IN ({", ".join("?" for _ in ids)})')
            run_params.extend(ids)
        if success_only:
            cand_where.append('"status" = \'success\' AND "score_ms" IS NOT NULL')
        # Two reads joined here instead of one SQL join: the run facts are the same for
        # every candidate of a run, so they are read once per run and repeated by
        # position (for a 1M-row cell this halves the database's share of the read).
        run_sel = ", ".join(f'"{x}"' for x in C.RUN_COLUMNS)
        cand_sel = ", ".join(f'"{x}"' for x in cand_cols)
        run_sql = f"SELECT {run_sel} FROM runs WHERE {' AND '.join(run_where)} ORDER BY run_id"
        cand_sql = (
            f"SELECT run_id, {cand_sel} "
            f"FROM candidates WHERE run_id IN (SELECT run_id FROM runs WHERE "
            f"{' AND '.join(run_where)}) AND {' AND '.join(cand_where)} "
            "ORDER BY run_id, candidate_index"
        )
        text_runs = [x for x in C.RUN_COLUMNS if x in _TEXT_COLUMNS]
        text_cands = [x for x in cand_cols if x in _TEXT_COLUMNS]
        with self.engine.connect() as conn:
            runs = dialects.read_frame(
                conn, run_sql, run_params, categorical=text_runs if categorical else ()
            )
            cands = dialects.read_frame(
                conn,
                cand_sql,
                [*run_params, *cand_params],
                categorical=text_cands if categorical else (),
            )
        return _join_runs(runs, cands, cand_cols)

    def coverage(self) -> pd.DataFrame:
        """Model x hardware x quant x world size: runs, candidates and distinct workloads
        (num_tokens x parallel_mode x cuda_graph) with at least one success."""
        sql = (
            "SELECT r.model, r.hardware, r.quant, r.world_size, "
            "bool_or(r.synthetic) AS synthetic, count(DISTINCT r.run_id) AS runs, "
            "count(*) AS candidates, "
            "count(DISTINCT CASE WHEN c.status = 'success' THEN "
            "CAST(c.num_tokens AS VARCHAR) || '|' || c.parallel_mode || '|' || "
            "CAST(c.cuda_graph AS VARCHAR) END) AS workloads "
            "FROM runs r JOIN candidates c ON c.run_id = r.run_id "
            "GROUP BY r.model, r.hardware, r.quant, r.world_size "
            "ORDER BY r.model, r.hardware, r.quant, r.world_size"
        )
        with self.engine.connect() as conn:
            return dialects.read_frame(conn, sql)

    def table_counts(self) -> dict[str, int]:
        """Row count of every table (used by tests to prove writes did not happen)."""
        out = {}
        with self.engine.connect() as conn:
            for table in (schema.uploads, schema.runs, schema.candidates, schema.api_tokens):
                out[table.name] = int(
                    conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() or 0
                )
        return out

    # ------------------------------------------------------------------ tokens
    def create_token(self, name: str, scopes: Sequence[str]) -> tuple[TokenInfo, str]:
        """Create a token; returns its info and the secret (shown once, never stored)."""
        wanted = tokens.validate_scopes(tuple(scopes))
        name = name.strip()
        if not name or len(name) > 100 or not name.isprintable():
            raise ValueError("name: 1-100 printable characters required")
        try:
            with self._write() as conn:
                token_id, secret = tokens.insert_token(conn, name, wanted)
        except sa.exc.DBAPIError as exc:
            if dialects.is_unique_violation(exc):
                raise Conflict("name", f"a token named {name!r} already exists") from exc
            raise
        return self._token(token_id), secret

    def _token(self, token_id: int) -> TokenInfo:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(schema.api_tokens).where(schema.api_tokens.c.token_id == token_id)
            ).first()
        if row is None:
            raise NotFound("token", token_id)
        return tokens.row_to_info(row)

    def list_tokens(self) -> list[TokenInfo]:
        """All tokens, revoked ones included, oldest first."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(schema.api_tokens).order_by(schema.api_tokens.c.token_id)
            ).all()
        return [tokens.row_to_info(r) for r in rows]

    def revoke_token(self, name_or_id: str) -> TokenInfo:
        """Revoke by name or numeric id; revoking twice is a no-op."""
        t = schema.api_tokens
        cond = t.c.name == name_or_id
        if name_or_id.isdigit():
            cond = sa.or_(cond, t.c.token_id == int(name_or_id))
        with self._write() as conn:
            row = conn.execute(sa.select(t.c.token_id, t.c.revoked_at).where(cond)).first()
            if row is None:
                raise NotFound("token", name_or_id)
            if row[1] is None:
                conn.execute(
                    t.update()
                    .where(t.c.token_id == row[0])
                    .values(revoked_at=dt.datetime.now(dt.UTC))
                )
        return self._token(int(row[0]))

    def verify_token(self, secret: str) -> TokenInfo | None:
        """The active token with this secret, or None (unknown or revoked)."""
        if not secret or len(secret) > 200:
            return None
        with self.engine.connect() as conn:
            info = tokens.find_by_secret(conn, secret)
        if info is None or not info.active:
            return None
        return info


# Run facts that identify what was measured; upload annotations (notes, CI URL,
# filename) do not change the identity of a run.
_IDENTITY_RUN_KEYS = (
    C.SOURCE_FORMAT,
    C.MODEL,
    C.NUM_EXPERTS,
    C.TOP_K,
    C.HIDDEN_SIZE,
    C.INTERMEDIATE_SIZE,
    C.QUANT,
    C.HARDWARE,
    C.WORLD_SIZE,
    C.TRTLLM_VERSION,
    C.TRTLLM_COMMIT,
    "device_name",
    "environment_json",
    "model_json",
)


def sweep_fingerprint(sweep: Sweep) -> str:
    """Content identity of a sweep: SHA-256 over its identifying run facts and its
    candidates with canonical dtypes, so the same measurements arriving in different
    bytes (NVIDIA's data.js and its CSVs, a re-serialised report) map to one run."""
    digest = hashlib.sha256()
    facts = {k: _plain(sweep.run.get(k)) for k in _IDENTITY_RUN_KEYS}
    digest.update(json.dumps(facts, sort_keys=True, default=str).encode())
    frame = sweep.candidates
    for name in C.CANDIDATE_COLUMNS:
        col = frame[name]
        if name in C.INT_COLUMNS or name in C.FLOAT_COLUMNS:
            # one numeric dtype for both, so 4 and 4.0 hash alike across parsers
            col = pd.to_numeric(col, errors="coerce").astype("Float64")
        elif name in C.BOOL_COLUMNS:
            col = col.astype("boolean")
        else:
            col = col.astype("string")
        digest.update(name.encode())
        digest.update(pd.util.hash_pandas_object(col, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _join_runs(runs: pd.DataFrame, cands: pd.DataFrame, cand_cols: list[str]) -> pd.DataFrame:
    """Run columns repeated onto their candidates (by position), then the candidate
    columns; nullable integer/boolean columns without a missing value become numpy."""
    run_ids = runs[C.RUN_ID].to_numpy(np.int64)
    cand_runs = cands[C.RUN_ID].to_numpy(np.int64)
    pos = np.searchsorted(run_ids, cand_runs) if len(run_ids) else np.zeros(0, np.int64)
    out: dict[str, Any] = {C.RUN_ID: cand_runs}
    if not len(cands) and cands[C.RUN_ID].dtype == object:
        # PostgreSQL rows carry no types: an empty read is all object columns
        out = {col: np.empty(0, dtype=object) for col in C.RUN_COLUMNS}
    for col in C.RUN_COLUMNS[1:] if len(out) == 1 else ():
        values = runs[col].array.take(pos) if len(cand_runs) else runs[col].array[:0]
        if isinstance(values.dtype, pd.Int64Dtype | pd.BooleanDtype) and not values.isna().any():
            values = values.to_numpy(values.dtype.numpy_dtype)
        elif col in _TEXT_COLUMNS and values.dtype != object and values.isna().all():
            # as a direct read: a text column with no value at all is object/None
            none = np.full(len(values), None, dtype=object)
            values = pd.Categorical(none) if isinstance(values.dtype, pd.CategoricalDtype) else none
        out[col] = values
    for col in cand_cols:
        out[col] = cands[col].array
    return pd.DataFrame(out, copy=False)


def _equals(table: sa.Table, **values: Any) -> list[sa.ColumnElement[bool]]:
    return [table.c[k] == v for k, v in values.items() if v is not None]


def _filter_conditions(table: sa.Table, filters: dict[str, Any]) -> list[sa.ColumnElement[bool]]:
    conds: list[sa.ColumnElement[bool]] = []
    for name, value in filters.items():
        if name not in table.c or name in (C.PER_RANK_JSON, C.EXTRA_JSON):
            raise ValueError(f"filters: unknown column {name!r}")
        if value is None:
            continue
        if isinstance(value, list | tuple):
            conds.append(table.c[name].in_(list(value)))
        else:
            conds.append(table.c[name] == value)
    return conds
