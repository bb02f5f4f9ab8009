"""Alembic revisions: an old database upgrades to exactly the schema a fresh one gets,
with its data; the hand-made migrations' databases are recognised. DuckDB and
PostgreSQL."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import zstandard
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from db import migrations, schema
from db.errors import StoreError
from db.session import Database, make_engine
from db.store import open_store
from ingest.records import UploadMeta
from tests.conftest import PG_URL
from tests.factories.sweeps import make_sweep

LEGACY = Path(__file__).resolve().parent / "legacy"
HAND_MADE_NAMES = {
    1: "initial schema",
    2: "run facet index",
    3: "cross-validation: serving imports, workloads, outcomes",
}


@pytest.fixture
def head_url(db_url: str, tmp_path: Path) -> Iterator[str]:
    """A second fresh database of the same kind as ``db_url``."""
    if db_url.startswith("duckdb"):
        yield f"duckdb:///{tmp_path / 'head.duckdb'}"
        return
    name = "t_" + uuid.uuid4().hex[:12]
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {name}")
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{name}"
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {name} CASCADE")
        admin.dispose()


def snapshot(url: str) -> dict[str, Any]:
    """Tables (columns with type, nullability, default; keys, uniques, indexes) and
    sequences, as the database itself reports them."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            insp = sa.inspect(conn)
            tables = {}
            for table in sorted(insp.get_table_names()):
                tables[table] = {
                    "columns": [
                        (c["name"], c["type"].compile(engine.dialect), c["nullable"], c["default"])
                        for c in insp.get_columns(table)
                    ],
                    "pk": insp.get_pk_constraint(table)["constrained_columns"],
                    "unique": sorted(
                        (u["name"], tuple(u["column_names"]))
                        for u in insp.get_unique_constraints(table)
                    ),
                    "indexes": sorted(
                        (i["name"], tuple(i["column_names"]), i["unique"])
                        for i in insp.get_indexes(table)
                    ),
                }
            return {"tables": tables, "sequences": sorted(insp.get_sequence_names())}
    finally:
        engine.dispose()


def _insert_old_rows(conn: sa.Connection) -> None:
    """One upload, run, candidate and token written as the oldest schema takes them
    (literal SQL, ids from the sequences, as the store of that time wrote them)."""
    now = {"now": "2025-01-02 03:04:05+00"}
    conn.execute(
        sa.text(
            "INSERT INTO uploads (upload_id, sha256, filename, source_format, size_bytes, "
            "compression, content, meta_json, uploaded_by, uploaded_at) VALUES "
            "(nextval('upload_id_seq'), 'abc', 'old.json', 'bench_moe', 3, 'zstd', :content, "
            "'{\"hardware\": \"GB300\"}', 'ci', CAST(:now AS TIMESTAMPTZ))"
        ),
        {"content": zstandard.ZstdCompressor().compress(b"old"), **now},
    )
    conn.execute(
        sa.text(
            "INSERT INTO runs (run_id, upload_id, run_key, sweep_key, model, hardware, "
            "world_size, synthetic, n_candidates, n_success, n_failed, n_skipped, created_at) "
            "VALUES (nextval('run_id_seq'), 1, 'old-run', 'ws=4', 'old_model', 'GB300', 4, "
            "false, 1, 1, 0, 0, CAST(:now AS TIMESTAMPTZ))"
        ),
        now,
    )
    conn.execute(
        sa.text(
            "INSERT INTO candidates (run_id, candidate_index, num_tokens, backend, status, "
            "score_ms, cuda_graph) VALUES (1, 0, 128, 'CUTLASS', 'success', 0.25, true)"
        )
    )
    conn.execute(
        sa.text(
            "INSERT INTO api_tokens (token_id, name, scopes, token_hash, prefix, created_at) "
            "VALUES (nextval('token_id_seq'), 'old', 'upload', 'h', 'mdt_old', "
            "CAST(:now AS TIMESTAMPTZ))"
        ),
        now,
    )


def _check_old_rows_survived(url: str) -> None:
    store = open_store(url, upgrade=False)
    try:
        run = store.get_run(1)
        assert (run["model"], run["hardware"], run["filename"]) == (
            "old_model",
            "GB300",
            "old.json",
        )
        cands = store.list_candidates(1).items
        assert cands["score_ms"].tolist() == [0.25] and cands["backend"].tolist() == ["CUTLASS"]
        assert store.raw_upload(1).content == b"old"
        # revision 0007 copied the old candidate into the cell-keyed measurements
        measured = store.stats.cell_frame("old_model", "GB300", "NVFP4")
        assert measured.empty  # the old run has no quant: it is not that cell
        m = schema.measurements
        with store.engine.connect() as conn:
            rows = conn.execute(sa.select(m.c.run_id, m.c.model, m.c.score_ms)).all()
        assert [tuple(r) for r in rows] == [(1, "old_model", 0.25)]
        # revision 0009 summarised it: its workload and the backend that ran
        with store.engine.connect() as conn:
            work = conn.execute(
                sa.select(schema.run_workloads.c.run_id, schema.run_workloads.c.n_rows)
            ).all()
            caps = conn.execute(sa.select(schema.run_capabilities.c.backend)).all()
        assert [tuple(r) for r in work] == [(1, 1)] and [r[0] for r in caps] == ["CUTLASS"]
        assert [t.name for t in store.tokens.list_tokens()] == ["old"]
        # the sequences carried on: new rows get new ids
        new = store.ingest([make_sweep(3)], b"new", UploadMeta(hardware="GB300"))
        assert new.upload_id == 2 and new.runs[0].run_id == 2
    finally:
        store.close()


def test_oldest_revision_upgrades_to_the_fresh_head_schema(db_url: str, head_url: str) -> None:
    db = Database(make_engine(db_url))
    try:
        assert migrations.upgrade(db, "0001") == 1
        with db.write("seed") as conn:
            _insert_old_rows(conn)
        assert migrations.upgrade(db) == migrations.head_revision() == 9
    finally:
        db.close()
    open_store(head_url).close()
    assert snapshot(db_url) == snapshot(head_url)
    _check_old_rows_survived(db_url)


def legacy_statements(dialect: str, versions: range) -> list[str]:
    """The hand-made migrations' statements for ``versions`` (0 = their bookkeeping
    table), from ``legacy/<dialect>.sql`` (recorded from them as they ran)."""
    out: list[str] = []
    version = -1
    statement: list[str] = []
    for line in (LEGACY / f"{dialect}.sql").read_text().splitlines():
        marker = re.fullmatch(r"-- version (\d+)", line)
        if marker:
            version = int(marker[1])
        elif line.startswith("--") or not line.strip():
            continue
        elif version in versions:
            statement.append(line)
            if line.endswith(";"):
                out.append("\n".join(statement)[:-1])
                statement = []
    return out


def _hand_made_database(url: str, version: int) -> None:
    """What the hand-made migrations left at ``version``: their exact statements and
    their bookkeeping rows, plus the rows of ``_insert_old_rows``."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            for statement in legacy_statements(engine.dialect.name, range(version + 1)):
                conn.exec_driver_sql(statement)
            for v in range(1, version + 1):
                conn.execute(
                    sa.text(
                        "INSERT INTO moedash_schema_version (version, name, applied_at) "
                        "VALUES (:v, :name, CURRENT_TIMESTAMP)"
                    ),
                    {"v": v, "name": HAND_MADE_NAMES[v]},
                )
            _insert_old_rows(conn)
    finally:
        engine.dispose()


@pytest.mark.parametrize("version", [1, 2, 3])
def test_hand_made_database_is_recognised_and_upgraded(
    db_url: str, head_url: str, version: int
) -> None:
    _hand_made_database(db_url, version)
    old = open_store(db_url, upgrade=False)
    try:
        assert old.schema_version() == version
    finally:
        old.close()
    store = open_store(db_url)  # upgrades
    try:
        assert store.schema_version() == migrations.head_revision()
        assert store.upgrade() == migrations.head_revision()  # and again: nothing to do
    finally:
        store.close()
    open_store(head_url).close()
    assert snapshot(db_url) == snapshot(head_url)
    assert "moedash_schema_version" not in snapshot(db_url)["tables"]
    _check_old_rows_survived(db_url)


def test_head_matches_the_tables_queries_are_built_from(db_url: str) -> None:
    def same_type(_ctx: Any, _i: Any, _m: Any, reflected: Any, declared: Any) -> bool | None:
        # DuckDB reports TEXT as VARCHAR (one type there); other pairs as alembic decides
        if isinstance(declared, sa.Text) and isinstance(reflected, sa.String):
            return False
        return None

    store = open_store(db_url)
    try:
        with store.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": same_type})
            assert compare_metadata(context, schema.metadata) == []
    finally:
        store.close()


def test_a_database_newer_than_the_code_is_refused_untouched(db_url: str) -> None:
    open_store(db_url).close()
    engine = make_engine(db_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0099'")
    engine.dispose()
    with pytest.raises(StoreError, match="upgrade failed"):
        open_store(db_url)
    before = snapshot(db_url)
    assert "runs" in before["tables"]


def test_a_failing_revision_leaves_the_database_as_it_was(db_url: str) -> None:
    # A table of ours that no revision recorded: 0001 fails creating it again.
    engine = make_engine(db_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE uploads (x INTEGER)")
    engine.dispose()
    with pytest.raises(StoreError, match="^upgrade failed: "):
        open_store(db_url)
    after = snapshot(db_url)
    assert sorted(after["tables"]) == ["uploads"] and after["sequences"] == []


def test_downgrade_to_base_and_up_again(db_url: str, head_url: str) -> None:
    open_store(db_url).close()
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            command.downgrade(migrations.alembic_config(conn), "0003")
            # back at the hand-made bookkeeping: the old code would find version 3
            assert (
                conn.execute(sa.text("SELECT max(version) FROM moedash_schema_version")).scalar()
                == 3
            )
        with engine.begin() as conn:
            command.downgrade(migrations.alembic_config(conn), "base")
    finally:
        engine.dispose()
    empty = snapshot(db_url)
    assert sorted(empty["tables"]) == ["alembic_version"] and empty["sequences"] == []
    open_store(db_url).close()
    open_store(head_url).close()
    assert snapshot(db_url) == snapshot(head_url)


def test_empty_hand_made_bookkeeping_table_is_a_fresh_database(db_url: str, head_url: str) -> None:
    # the old health check created the table on a read, holding nothing
    engine = make_engine(db_url)
    with engine.begin() as conn:
        for statement in legacy_statements(engine.dialect.name, range(1)):
            conn.exec_driver_sql(statement)
    engine.dispose()
    open_store(db_url).close()
    open_store(head_url).close()
    assert snapshot(db_url) == snapshot(head_url)


@pytest.mark.postgres
def test_concurrent_first_upgrades_apply_each_revision_once(pg_schema_url: str) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        try:
            open_store(pg_schema_url).close()
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = open_store(pg_schema_url, upgrade=False)
    try:
        assert store.schema_version() == migrations.head_revision()
    finally:
        store.close()
