"""GET /api/v1/compare and /api/v1/history*: bounded parameters (422 naming the field),
unknown sides, CSV downloads named for what they hold."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from fastapi.testclient import TestClient

from db.store import Store
from ingest.records import UploadMeta
from tests.factories import sweeps
from tests.factories import version_sweeps as V


@pytest.fixture
def seeded(store: Store) -> dict[str, int]:
    return V.seed_versions(store)


def _error(resp: Any, field: str) -> dict[str, Any]:
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"]
    hit = [d for d in detail if field in d["loc"]]
    assert hit, detail
    return dict(hit[0])


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"head": V.RC28}, "base"),
        ({"base": V.RC27}, "head"),
        ({"base": "", "head": V.RC28}, "base"),
        ({"base": "x" * 65, "head": V.RC28}, "base"),
        ({"base": "1.2; drop", "head": V.RC28}, "base"),
        ({"base": V.RC27, "head": V.RC28, "threshold_pct": -1}, "threshold_pct"),
        ({"base": V.RC27, "head": V.RC28, "threshold_pct": 5000}, "threshold_pct"),
        ({"base": V.RC27, "head": V.RC28, "threshold_pct": "nan"}, "threshold_pct"),
        ({"base": V.RC27, "head": V.RC28, "repeats": "mean"}, "repeats"),
        ({"base": V.RC27, "head": V.RC28, "table": "everything"}, "table"),
        ({"base": V.RC27, "head": V.RC28, "world_size": 0}, "world_size"),
    ],
)
def test_compare_bad_parameters(
    client: TestClient, seeded: dict[str, int], params: dict[str, Any], field: str
) -> None:
    _error(client.get("/api/v1/compare", params={**V.SLICE, **params}), field)


def test_unknown_version_names_its_side_and_lists_known(
    client: TestClient, seeded: dict[str, int]
) -> None:
    err = _error(
        client.get("/api/v1/compare", params={**V.SLICE, "base": "1.2.0rc1", "head": V.RC28}),
        "base",
    )
    assert err["type"] == "unknown_version"
    assert "1.2.0rc9, 1.2.0rc27, 1.2.0rc28" in err["msg"]
    err = _error(
        client.get("/api/v1/compare", params={**V.SLICE, "base": V.RC27, "head": "9999"}),
        "head",
    )
    assert err["type"] == "unknown_run"


def test_unknown_run_without_scope(client: TestClient, seeded: dict[str, int]) -> None:
    err = _error(client.get("/api/v1/compare", params={"base": "9999", "head": "4"}), "base")
    assert err["msg"] == "no run 9999"


def test_runs_of_two_cells_are_refused(
    client: TestClient, store: Store, seeded: dict[str, int]
) -> None:
    other = sweeps.make_sweep(model=V.MODEL, hardware="H100", quant=V.QUANT, world_size=8)
    run = store.ingest([other], b"h100", UploadMeta(hardware="H100")).runs[0].run_id
    resp = client.get("/api/v1/compare", params={"base": str(seeded["rc27a"]), "head": str(run)})
    err = _error(resp, "head")
    assert "H100" in err["msg"] and err["type"] == "other_cell"


def test_compare_csv_download(client: TestClient, seeded: dict[str, int]) -> None:
    params = {**V.SLICE, "base": V.RC27, "head": V.RC28, "format": "csv"}
    resp = client.get("/api/v1/compare", params=params)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/csv")
    assert resp.headers["content-disposition"] == (
        'attachment; filename="compare-deepseek_v4_pro-GB300-NVFP4-ws8-1.2.0rc27-vs-1.2.0rc28.csv"'
    )
    rows = list(csv.DictReader(io.StringIO(resp.text)))
    assert len(rows) == 9
    verdicts = sorted(r["verdict"] for r in rows)
    assert verdicts.count("regression") == 1 and verdicts.count("new_failure") == 1
    regression = next(r for r in rows if r["verdict"] == "regression")
    assert float(regression["change_pct"]) == pytest.approx(20.0)
    best = client.get("/api/v1/compare", params={**params, "table": "best_changes"})
    assert "-best-changes.csv" in best.headers["content-disposition"]
    best_rows = list(csv.DictReader(io.StringIO(best.text)))
    assert [(r["base_best_backend"], r["head_best_backend"]) for r in best_rows] == [
        ("TRTLLM", "CUTEDSL")
    ]


def test_compare_json_shape(client: TestClient, seeded: dict[str, int]) -> None:
    body = client.get(
        "/api/v1/compare", params={**V.SLICE, "base": V.RC27, "head": V.RC28, "threshold_pct": 1}
    ).json()
    assert body["threshold_pct"] == 1.0
    assert "noise_pct" in body["noise_rule"]
    # the +20 % only: the prefill +2.5 % passes 1 % but not the band of two runs
    assert body["counts"]["regression"] == 1 and body["counts"]["inconclusive"] == 2
    assert body["filename"].endswith(".csv")


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/v1/history", {"by": "commit"}, "by"),
        ("/api/v1/history", {"limit": 0}, "limit"),
        ("/api/v1/history", {"num_tokens": 0}, "num_tokens"),
        ("/api/v1/history", {"by": "run", "best_only": "true"}, "best_only"),
        ("/api/v1/history/frontier", {"version": ["1.2.0rc1"]}, "version"),
        ("/api/v1/history/frontier", {"version": [f"1.0.{i}" for i in range(21)]}, "version"),
        ("/api/v1/history/frontier-change", {"base": V.RC27}, "head"),
        ("/api/v1/history/frontier-change", {"base": "nope", "head": V.RC28}, "base"),
    ],
)
def test_history_bad_parameters(
    client: TestClient, seeded: dict[str, int], path: str, params: dict[str, Any], field: str
) -> None:
    _error(client.get(path, params={**V.SLICE, **params}), field)


def test_history_paging_and_csv(client: TestClient, seeded: dict[str, int]) -> None:
    full = client.get("/api/v1/history", params=V.SLICE).json()
    page = client.get("/api/v1/history", params={**V.SLICE, "limit": 2, "offset": 1}).json()
    assert page["total"] == full["total"] and page["items"] == full["items"][1:3]
    resp = client.get("/api/v1/history", params={**V.SLICE, "format": "csv"})
    assert resp.headers["content-disposition"] == 'attachment; filename="history.csv"'
    assert len(list(csv.DictReader(io.StringIO(resp.text)))) == full["total"]


def test_frontier_change_csv(client: TestClient, seeded: dict[str, int]) -> None:
    params = {**V.SLICE, "base": V.RC27, "head": V.RC28, "format": "csv"}
    resp = client.get("/api/v1/history/frontier-change", params=params)
    assert "frontier-change-1.2.0rc27-vs-1.2.0rc28.csv" in resp.headers["content-disposition"]
    rows = {r["phase"]: r for r in csv.DictReader(io.StringIO(resp.text))}
    assert float(rows["decode"]["latency_change_pct"]) == pytest.approx(10.0)
    assert float(rows["prefill"]["throughput_change_pct"]) == pytest.approx(100 * (8 / 8.2 - 1))


def test_compare_verdict_filter_and_paging(client: TestClient, seeded: dict[str, int]) -> None:
    params = {**V.SLICE, "base": V.RC27, "head": V.RC28}
    full = client.get("/api/v1/compare", params=params).json()
    assert full["total"] == 9 and len(full["items"]) == 9
    some = client.get(
        "/api/v1/compare", params={**params, "verdict": ["regression", "new_failure"]}
    ).json()
    assert sorted(r["verdict"] for r in some["items"]) == ["new_failure", "regression"]
    assert some["total"] == 2 and some["counts"] == full["counts"]
    page = client.get("/api/v1/compare", params={**params, "limit": 3, "offset": 3}).json()
    assert page["items"] == full["items"][3:6]
    _error(client.get("/api/v1/compare", params={**params, "verdict": "worse"}), "verdict")
    _error(client.get("/api/v1/compare", params={**params, "limit": 0}), "limit")
