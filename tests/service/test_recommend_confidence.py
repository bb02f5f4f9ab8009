"""A recommendation's confidence panel: the Best row's words where the workload was
measured; between two measured token counts, both neighbours -- and when they disagree,
the crossover bracket, "measure first" and the bench_moe command that settles it."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from analysis import columns as C
from analysis import confidence as CF
from dashboard.app import parse_search
from db.store import Store
from ingest.records import Sweep, UploadMeta
from service.best import cell_best
from service.frames import Cell, DashData
from service.recommend_confidence import recommend_confidence
from tests import factories
from tests.factories import sweeps
from tests.factories.dashboard import by_testid, walk
from tests.service.stores import PARITY_CELL, seed_tie_sweep

AGREE = Cell("kimi_k2", "GB300", "NVFP4")


def _agreeing_sweep() -> Sweep:
    """World size 8, decode, attention DP: TRTLLM wins at 64 and at 256 tokens."""
    rows = [
        {C.NUM_TOKENS: 64, C.BACKEND: "TRTLLM", C.SCORE_MS: 0.5},
        {C.NUM_TOKENS: 64, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 0.9},
        {C.NUM_TOKENS: 256, C.BACKEND: "TRTLLM", C.SCORE_MS: 0.8},
        {C.NUM_TOKENS: 256, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 1.3},
    ]
    shape = {C.MODEL: AGREE.model, C.HARDWARE: AGREE.hardware, C.QUANT: AGREE.quant}
    frame = factories.make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)])
    run = sweeps.make_run(world_size=8, synthetic=False, trtllm_version="v1.3.0rc26", **shape)
    return Sweep(key="", run=run, candidates=frame[list(C.CANDIDATE_COLUMNS)])


@pytest.fixture
def data(store: Store) -> DashData:
    seed_tie_sweep(store)  # TRTLLM at 64, MEGAMOE_CUTEDSL at 256 tokens
    store.ingest([_agreeing_sweep()], b"agree", UploadMeta(hardware=AGREE.hardware))
    return DashData(store, version_ttl=0.0)


def test_measured_workload_says_what_best_says(data: DashData) -> None:
    got = recommend_confidence(data, PARITY_CELL, 8, 64, decode=True, attention_dp=True)
    table = cell_best(data, PARITY_CELL, "dashboard", 8).table
    row = table[table[C.NUM_TOKENS] == 64].iloc[0]
    assert got is not None and got.measured and got.neighbours == ()
    assert (got.verdict, got.note) == (row[CF.CONFIDENCE], row[CF.CONFIDENCE_NOTE])


def test_disagreeing_neighbours_give_the_crossover_and_the_command(data: DashData) -> None:
    got = recommend_confidence(data, PARITY_CELL, 8, 128, decode=True, attention_dp=True)
    assert got is not None and not got.measured and got.disagree
    assert got.verdict == CF.MEASURE_FIRST and got.crossover == (64, 256)
    lo, hi = got.neighbours
    assert (lo.num_tokens, hi.num_tokens) == (64, 256)
    assert lo.pick.startswith("TRTLLM") and hi.pick.startswith("MEGAMOE_CUTEDSL")
    assert got.command is not None and "--balanced_total_num_tokens 128" in got.command
    assert "--world_size 8" in got.command and "DEP" in got.command
    body = got.as_dict()
    assert body["crossover"] == [64, 256] and body["neighbours"][1]["num_tokens"] == 256


def test_agreeing_neighbours_and_one_sided_extrapolation(data: DashData) -> None:
    got = recommend_confidence(data, AGREE, 8, 128, decode=True, attention_dp=True)
    assert got is not None and not got.measured and not got.disagree
    assert {n.pick for n in got.neighbours} == {got.neighbours[0].pick}
    assert got.verdict in (CF.DEPLOY, CF.TIE) and "resting on neighbours" in got.note
    beyond = recommend_confidence(data, AGREE, 8, 4096, decode=True, attention_dp=True)
    assert beyond is not None and beyond.verdict == CF.MEASURE_FIRST
    assert [n.num_tokens for n in beyond.neighbours] == [256]
    assert "--balanced_total_num_tokens 4096" in str(beyond.command)
    # nothing stored for attention TP or prefill at this world size
    assert recommend_confidence(data, AGREE, 8, 128, decode=False, attention_dp=True) is None


def test_the_recommendation_api_carries_the_panel(data: DashData, client: TestClient) -> None:
    """GET /api/v1/recommendation: the same panel (one code path)."""
    cell = {"model": PARITY_CELL.model, "hardware": PARITY_CELL.hardware}
    base = {**cell, "quant": PARITY_CELL.quant, "world_size": 8, "attention": "dp"}
    base["phase"] = "decode"
    between = client.get("/api/v1/recommendation", params={**base, "num_tokens": 128})
    assert between.status_code == 200, between.text
    panel = between.json()["confidence"]
    want = recommend_confidence(data, PARITY_CELL, 8, 128, decode=True, attention_dp=True)
    assert want is not None and panel == want.as_dict()
    assert panel["disagree"] and panel["verdict"] == "measure first"
    at = client.get("/api/v1/recommendation", params={**base, "num_tokens": 64}).json()
    assert at["confidence"]["measured"] is True and at["confidence"]["neighbours"] == []


def test_the_measured_export_says_the_same_words(data: DashData, client: TestClient) -> None:
    """The export's YAML comments and JSON provenance carry the panel's note."""
    cell = {"model": PARITY_CELL.model, "hardware": PARITY_CELL.hardware}
    base = {**cell, "quant": PARITY_CELL.quant, "world_size": 8, "attention": "dp"}
    params = {**base, "phase": "decode", "num_tokens": 128, "source": "measured"}
    want = recommend_confidence(data, PARITY_CELL, 8, 128, decode=True, attention_dp=True)
    assert want is not None
    body = client.get("/api/v1/export", params={**params, "format": "json"}).json()
    assert body["provenance"]["confidence"] == want.note
    yaml_text = client.get("/api/v1/export", params={**params, "format": "yaml"}).text
    assert f"# confidence: {want.note}" in yaml_text
    tree_params = {**params, "source": "tree", "format": "json"}
    tree = client.get("/api/v1/export", params=tree_params).json()
    assert tree["provenance"]["confidence"] is None  # the tree's rule: no measurement


def test_the_recommend_page_shows_the_panel(data: DashData) -> None:
    """The Recommend page between two disagreeing neighbours: the API's note, both
    neighbours, the crossover and the bench_moe command, on the page."""
    from dashboard.pages import recommend

    form = recommend.Form(
        hardware=PARITY_CELL.hardware, model=PARITY_CELL.model, quant=PARITY_CELL.quant,
        ws=8, tokens=128,
    )  # fmt: skip
    body, _ = recommend.update(data, form)
    panel = by_testid(body, "rec-confidence")
    assert panel is not None
    text = " ".join(c for c in walk(panel) if isinstance(c, str))
    want = recommend_confidence(data, PARITY_CELL, 8, 128, decode=True, attention_dp=True)
    assert want is not None and want.note in text
    assert "crossover between 64 and 256 tokens" in text
    assert str(want.command) in text and "measured neighbour: 64 tokens" in text


def test_the_recommend_pages_url_is_the_apis_query(data: DashData, client: TestClient) -> None:
    """One query language: the page's permalink, sent to the API as it is, asks the
    same question (old permalinks' names still read)."""
    from dashboard.pages import recommend

    form = recommend.Form(
        hardware=PARITY_CELL.hardware, model=PARITY_CELL.model, quant=PARITY_CELL.quant,
        ws=8, attn="DP", tokens=128, th="published",
    )  # fmt: skip
    search = form.search()
    assert "world_size=8" in search and "attention=dp" in search and "num_tokens=128" in search
    resp = client.get("/api/v1/recommendation" + search)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["deployment"]["world_size"] == 8 and body["deployment"]["num_tokens"] == 128
    want = recommend_confidence(data, PARITY_CELL, 8, 128, decode=True, attention_dp=True)
    assert want is not None and body["confidence"] == want.as_dict()
    old = "?hardware=GB300&model=deepseek_v4_pro&quant=NVFP4&ws=8&attn=DP&tokens=128"
    assert recommend.parse_form(parse_search(old)) == recommend.parse_form(parse_search(search))
