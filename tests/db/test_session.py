"""One managed session: every public store method answers a database outage with
StoreError, on reads as on writes, on DuckDB and on PostgreSQL."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis.serving_map import map_workloads
from db.candidates import CandidateReader
from db.crossval import CrossvalRepository
from db.crossval_records import OutcomeRecord
from db.errors import StoreError, UniqueViolation
from db.prepared import PreparedUpload, prepare_upload
from db.runs import RunRepository
from db.store import Store, open_store
from db.tokens import TokenRepository
from ingest.records import UploadMeta
from ingest.serving_configs import import_directory, points_frame, recipe_configs
from tests.db.outage import Outage, outage_database
from tests.factories.sweeps import make_sweep

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "serving"
META = UploadMeta(hardware="GB300")


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def outage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Outage]:
    with outage_database(str(request.param), tmp_path) as o:
        yield o


@pytest.fixture(scope="module")
def serving() -> tuple[pd.DataFrame, pd.DataFrame, str]:
    r = import_directory(FIXTURE)
    points = points_frame(r)
    return points, map_workloads(points, recipe_configs(r)), r.content_hash


def _prepared(raw: bytes) -> PreparedUpload:
    """An upload prepared as a parse-pool worker would (db.prepared)."""
    return prepare_upload(raw, [make_sweep(5)], arrow=True)


def _calls(serving: tuple[pd.DataFrame, pd.DataFrame, str]) -> dict[str, Callable[[Any], Any]]:
    """One call of every public method that reaches the database, by name."""
    points, workloads, digest = serving
    return {
        # Store itself
        "upgrade": lambda s: s.upgrade(),
        "schema_version": lambda s: s.schema_version(),
        # runs
        "ingest": lambda s: s.ingest([make_sweep(5)], b"outage", META),
        "list_runs": lambda s: s.list_runs(),
        "get_run": lambda s: s.get_run(1),
        "get_run_exists": lambda s: s.get_run_exists(1),
        "raw_upload": lambda s: s.raw_upload(1),
        "delete_run": lambda s: s.delete_run(1),
        "table_counts": lambda s: s.table_counts(),
        "ingest_known": lambda s: s.ingest_known(b"outage", META),
        "ingest_prepared": lambda s: s.ingest_prepared(_prepared(b"outage"), META),
        "sighting_raw": lambda s: s.sighting_raw(1, 1),
        "recent_runs": lambda s: s.recent_runs(),
        "slice_versions": lambda s: s.slice_versions(
            model="m", hardware="h", quant=None, world_size=None
        ),
        "version_slice": lambda s: s.version_slice(1),
        # candidates
        "list_candidates": lambda s: s.list_candidates(1),
        "candidate_frame": lambda s: s.candidate_frame(categorical=True),
        "coverage": lambda s: s.coverage(),
        # tokens
        "create_token": lambda s: s.create_token("ci", ["upload"]),
        "list_tokens": lambda s: s.list_tokens(),
        "revoke_token": lambda s: s.revoke_token("ci"),
        "verify_token": lambda s: s.verify_token("mdt_" + "x" * 43),
        "record_use": lambda s: s.record_use(1),
        # cross-validation
        "import_serving": lambda s: s.import_serving(points, workloads, digest, "fixture"),
        "serving_imports": lambda s: s.serving_imports(),
        "serving_workloads": lambda s: s.serving_workloads({"phase": "decode"}),
        "serving_workload_count": lambda s: s.serving_workload_count(),
        "add_outcomes": lambda s: s.add_outcomes([OutcomeRecord("p:decode", 10.0, 12.0)]),
        "outcomes": lambda s: s.outcomes(),
        "crossval_counts": lambda s: s.crossval_counts(),
        "stored_ledger": lambda s: s.stored_ledger("k"),
        "store_ledger": lambda s: s.store_ledger("k", [{"a": 1}], 1.0),
        "stored_ledger_keys": lambda s: s.stored_ledger_keys(),
        "serving_choices": lambda s: s.serving_choices(),
        "outcomes_version": lambda s: s.outcomes_version(),
    }


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def _repository(store: Store, name: str) -> object:
    """The repository that owns method ``name`` (the store for its own methods)."""
    for repo in (store.runs, store.candidates, store.tokens, store.crossval):
        if name in _public_methods(type(repo)):
            return repo
    return store


def test_every_public_method_is_exercised(serving: tuple[pd.DataFrame, pd.DataFrame, str]) -> None:
    # A new public method must join _calls, so the outage test below covers it.
    public = set().union(
        *(
            _public_methods(cls)
            for cls in (Store, RunRepository, CandidateReader, TokenRepository, CrossvalRepository)
        )
    )
    # close and checkpoint_when_idle (a background thread) read nothing
    assert public - {"close", "checkpoint_when_idle"} == set(_calls(serving))


def test_outage_raises_store_error_from_every_method(
    outage: Outage, serving: tuple[pd.DataFrame, pd.DataFrame, str]
) -> None:
    store = open_store(outage.url)
    try:
        store.ingest([make_sweep(5)], b"before", META)
        outage.cut(store)
        for name, call in _calls(serving).items():
            owner = _repository(store, name)
            # the store delegates runs/candidates; tokens and crossval live only on theirs
            targets = {owner, store} if name in _public_methods(Store) else {owner}
            for target in targets:
                with pytest.raises(StoreError) as err:
                    call(target)
                # a plain store failure: not "not found", not a conflict, not a collision
                assert type(err.value) is StoreError, (name, err.value)
                assert str(err.value).startswith(f"{name} failed: "), str(err.value)
                assert err.value.__cause__ is not None
    finally:
        store.close()


@pytest.mark.postgres
def test_store_recovers_when_the_database_returns(tmp_path: Path) -> None:
    with outage_database("postgres", tmp_path) as outage:
        store = open_store(outage.url)
        try:
            run_id = store.ingest([make_sweep(5)], b"kept", META).runs[0].run_id
            outage.cut(store)
            with pytest.raises(StoreError):
                store.get_run(run_id)
            outage.restore()
            assert store.get_run(run_id)["n_candidates"] == 5
        finally:
            store.close()


def test_collisions_are_translated_too(store: Store) -> None:
    # The bulk candidate load talks to the raw driver connection (DuckDB register,
    # PostgreSQL COPY); its duplicate-key error arrives unwrapped and is translated.
    sweep = make_sweep(10)
    sweep.candidates.loc[3, "candidate_index"] = 2
    with pytest.raises(UniqueViolation, match="^ingest failed: "):
        store.ingest([sweep], b"dup", META)
    assert store.table_counts()["uploads"] == 0


def test_errors_of_our_own_pass_unchanged(store: Store) -> None:
    with pytest.raises(ValueError, match="order: unknown column"):
        store.list_candidates(store.ingest([make_sweep(3)], b"v", META).runs[0].run_id, order="x")


def test_duckdb_buffer_pool_is_bounded_unless_the_url_says(tmp_path: Path) -> None:
    """A replica's DuckDB keeps at most DUCKDB_MEMORY_LIMIT of blocks (not 80 % of the
    machine's RAM); a ``?memory_limit=`` in the database URL sets its own."""
    from db.session import DUCKDB_MEMORY_LIMIT, make_engine

    def limit(url: str) -> str:
        engine = make_engine(url)
        try:
            with engine.connect() as conn:
                return str(conn.exec_driver_sql("SELECT current_setting('memory_limit')").scalar())
        finally:
            engine.dispose()

    assert DUCKDB_MEMORY_LIMIT == "128MB"
    assert limit(f"duckdb:///{tmp_path / 'a.duckdb'}") == "122.0 MiB"  # 128 MB as DuckDB prints it
    assert limit(f"duckdb:///{tmp_path / 'b.duckdb'}?memory_limit=1GB") == "953.6 MiB"
