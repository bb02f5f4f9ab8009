"""service.crossval and service.crossval_import on a real store (DuckDB; PostgreSQL with
the postgres marker), with the known answers of tests/fixtures/serving and
``ingest_h200_candidates``: of the H200 dynamo-trt decode workloads, conc 8 is a Match
and conc 64 a Mismatch (backend CUTLASS->TRTLLM, gap 100 %)."""

from __future__ import annotations

import pytest

from analysis import crossval_columns as cc
from db.store import Store
from ingest.serving_configs import import_directory
from service import crossval as S
from service.crossval_import import (
    ServingFilesError,
    check_yaml,
    import_serving_directory,
    import_serving_files,
    relative_path,
)
from tests.api.test_api_crossval import FIXTURE, H200, ingest_h200_candidates

MASTER = "inferencex/configs/nvidia-master.yaml"


def fixture_files() -> dict[str, bytes]:
    """Every YAML of the mini data dir, keyed by its path under the data root."""
    return {
        str(p.relative_to(FIXTURE)): p.read_bytes()
        for p in sorted(FIXTURE.rglob("*"))
        if p.suffix in (".yaml", ".yml")
    }


@pytest.fixture
def seeded(store: Store) -> Store:
    import_serving_directory(store, FIXTURE, "fixture")
    ingest_h200_candidates(store)
    return store


def h200_decode_ids(store: Store) -> tuple[str, str]:
    """(Match workload id, Mismatch workload id): conc 8 and conc 64 of the H200 entry."""
    w = store.crossval.serving_workloads(S.workload_filters(None, "h200", "decode"))
    ids = [
        str(w[(w[cc.ENTRY] == H200) & (w[cc.CONC] == conc)][cc.WORKLOAD_ID].iloc[0])
        for conc in (8, 64)
    ]
    return ids[0], ids[1]


# ------------------------------------------------------------------ import
def test_files_import_equals_directory_import(store: Store) -> None:
    result = import_serving_files(store, fixture_files(), "files")
    assert result.parsed.content_hash == import_directory(FIXTURE).content_hash
    stored = result.stored
    assert (stored.n_entries, stored.n_points, stored.n_workloads) == (6, 16, 32)
    assert (stored.n_mappable, stored.n_unmappable) == (20, 12)
    again = import_serving_directory(store, FIXTURE, "dir")
    assert again.stored.already_existed and again.stored.import_id == stored.import_id
    assert len(S.serving_imports(store)) == 1


@pytest.mark.parametrize(
    ("name", "loc", "kind"),
    [
        (None, [3], "missing"),
        ("", [3], "missing"),
        ("../etc/x.yaml", ["../etc/x.yaml"], "invalid_path"),
        ("/abs/x.yaml", ["/abs/x.yaml"], "invalid_path"),
        ("inferencex/./a.yaml", ["inferencex/./a.yaml"], "invalid_path"),
        ("a//b.yaml", ["a//b.yaml"], "invalid_path"),
        ("a\\b.yaml", ["a\\b.yaml"], "invalid_path"),
        ("notes.txt", ["notes.txt"], "invalid_path"),
    ],
)
def test_relative_path_refuses_unsafe_names(
    name: str | None, loc: list[str | int], kind: str
) -> None:
    with pytest.raises(ServingFilesError) as info:
        relative_path(name, 3)
    assert (info.value.loc, info.value.kind) == (loc, kind)


def test_relative_path_keeps_safe_names() -> None:
    assert relative_path("srt-slurm/x/recipe.YML", 0) == "srt-slurm/x/recipe.YML"


def test_file_problems_name_the_file(store: Store) -> None:
    with pytest.raises(ServingFilesError) as bad_yaml:
        check_yaml({"ok.yaml": b"a: 1", "bad.yaml": b"a: [1, 2\nb: c"})
    assert bad_yaml.value.loc == ["bad.yaml"] and "invalid YAML" in bad_yaml.value.msg
    with pytest.raises(ServingFilesError) as not_utf8:
        check_yaml({"latin.yaml": "a: é".encode("latin-1")})
    assert not_utf8.value.loc == ["latin.yaml"] and "not UTF-8" in not_utf8.value.msg

    recipes_only = {
        k: v for k, v in fixture_files().items() if not k.startswith("inferencex/configs/")
    }
    with pytest.raises(ServingFilesError) as none:
        import_serving_files(store, recipes_only, "x")
    assert (none.value.loc, none.value.kind) == ([], "missing")
    assert "no NVIDIA master" in none.value.msg

    with pytest.raises(ServingFilesError) as broken:
        import_serving_files(store, {MASTER: b"e1:\n  model: x\n"}, "x")
    assert (broken.value.loc, broken.value.kind) == ([MASTER], "invalid_config")
    assert store.crossval.crossval_counts()["serving_imports"] == 0


# ------------------------------------------------------------------ reads
def test_workloads_page_counts_and_pages(seeded: Store) -> None:
    page = S.workloads_page(seeded, S.workload_filters(None, None, None), limit=5, offset=30)
    assert (page.total, len(page.items)) == (32, 2)
    dec = S.workloads_page(seeded, S.workload_filters(None, None, "decode", True), 100, 0)
    assert dec.total == 10 and dec.items[cc.MAPPABLE].all()
    assert S.workload_filters("m", "gb200", None)["hardware"] == "GB200"


def test_ledger_summary_and_outcomes_known_answers(seeded: Store) -> None:
    match_id, mismatch_id = h200_decode_ids(seeded)
    led = S.compute_ledger(seeded, S.workload_filters("deepseek_r1", "H200", None))
    assert tuple(led.columns) == (*cc.LEDGER_COLUMNS, *cc.RULED_COLUMNS) and len(led) == 8
    by_id = led.set_index(cc.WORKLOAD_ID)
    assert by_id.loc[match_id, cc.STATUS] == cc.MATCH
    assert by_id.loc[mismatch_id, cc.DIFFERS] == "backend: CUTLASS->TRTLLM"
    only = S.narrow(led, "decode", cc.MISMATCH)
    assert only[cc.WORKLOAD_ID].tolist() == [mismatch_id] and only.index.tolist() == [0]

    table = S.summary_table(seeded, led, 3.0)
    assert table[cc.S_MATCH].tolist() == ["1/2 (50%, prefill 0/0, decode 1/2)"]
    assert table[[cc.N_NOT_EVALUATED, cc.N_NO_DATA]].values.tolist() == [[1, 2]]

    seeded.crossval.add_outcomes(
        [
            {
                "workload_id": mismatch_id,
                "tps_per_user_deployed": 100.0,
                "tps_per_user_candidate": 110.0,
                "source": "e2e",
            }
        ]
    )
    outcomes = S.outcome_table(seeded, 3.0)
    assert outcomes[cc.OUTCOME].tolist() == [cc.IMPROVEMENT]
    assert outcomes["source"].tolist() == ["e2e"]
    assert S.outcome_table(seeded, 15.0)[cc.OUTCOME].tolist() == [cc.FLAT]
    assert S.summary_table(seeded, led, 3.0)[cc.S_IMPROVEMENT].tolist() == ["1/1"]


def test_no_mappable_workload_reads_no_candidates(seeded: Store) -> None:
    # kimi_k2 on H200 has no workloads: an empty ledger, not an error
    led = S.compute_ledger(seeded, S.workload_filters("kimi_k2", "H200", None))
    assert led.empty and tuple(led.columns) == (*cc.LEDGER_COLUMNS, *cc.RULED_COLUMNS)


def test_ledger_view_joins_outcomes_in_ledger_order(seeded: Store) -> None:
    _, mismatch_id = h200_decode_ids(seeded)
    led = S.compute_ledger(seeded, S.workload_filters(None, "H200", None))
    empty = S.ledger_view(led, S.outcome_table(seeded, 3.0), None, None)
    assert tuple(empty.columns) == S.LEDGER_VIEW_COLUMNS
    assert empty[cc.WORKLOAD_ID].tolist() == led[cc.WORKLOAD_ID].tolist()
    assert empty[cc.OUTCOME].isna().all() and str(empty[cc.CHANGE_PCT].dtype) == "Float64"

    seeded.crossval.add_outcomes(
        [
            {
                "workload_id": mismatch_id,
                "tps_per_user_deployed": 50.0,
                "tps_per_user_candidate": 40.0,
            }
        ]
    )
    view = S.ledger_view(led, S.outcome_table(seeded, 3.0), "decode", None)
    assert set(view[cc.PHASE]) == {"decode"}
    row = view.set_index(cc.WORKLOAD_ID).loc[mismatch_id]
    assert (row[cc.OUTCOME], row[cc.CHANGE_PCT]) == (cc.REGRESSION, pytest.approx(-20.0))
    counts = S.view_counts(view)
    assert counts == S.ViewCounts(
        total=4,
        by_status={cc.MATCH: 1, cc.MISMATCH: 1, cc.NOT_MAPPABLE: 2},
        nearest=0,
        with_outcome=1,
    )
    assert list(counts.by_status) == [cc.MATCH, cc.MISMATCH, cc.NOT_MAPPABLE]  # STATUSES order
