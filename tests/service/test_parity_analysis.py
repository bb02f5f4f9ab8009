"""Parity: the Pareto, Best and Recommend pages and the API give the same answers on the
same store (DuckDB; PostgreSQL with the postgres marker).

The page side is what the *registered* Dash callbacks return (found in the app's
callback map and called with the control values a browser sends), read back from the
components: the frontier traces' click keys, the best grid's rows, the recommendation's
facts table, the measured table and the YAML block. The API side is the real app over
the same store through Starlette's test client. Page and API each get their own read
path (``DashData``), so a shared cache cannot hide a difference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from analysis import columns as C
from dashboard.app import create_dash
from dashboard.pages import recommend
from dashboard.pages.pareto_query import ParetoQuery
from db.store import Store
from ingest.demo.generate import dump_report, generate_report
from ingest.detect import parse_upload
from ingest.records import UploadMeta
from moedash.app import create_app
from moedash.settings import Settings
from service.frames import Cell, DashData
from tests.factories.dashboard import seed_store, walk
from tests.service.stores import PARITY_CELL, seed_tie_sweep

KNOWN = Cell("deepseek_v4_pro", "GB300", "NVFP4")
OTHER = Cell("kimi_k2", "B300", "NVFP4")
# what identifies a workload's winner and runner-up in the Best grid (it shows no
# candidate index)
WINNER = (
    "best_run_id",
    "best_backend",
    "best_comm",
    "best_parallel_mode",
    "best_score_ms",
    "runner_up_backend",
    "runner_up_score_ms",
)


def _client(db_url: str, store: Store) -> Iterator[TestClient]:
    settings = Settings(database_url=db_url, enable_dashboard=False)
    with TestClient(create_app(settings, store=store)) as client:
        yield client


@pytest.fixture
def seeded(store: Store) -> Store:
    """The dashboard's known sweep and a 40-candidate kimi_k2 cell, plus synthetic
    deepseek_v4_pro GB300 sweeps at world sizes 4 and 8 (five token counts each)."""
    seed_store(store)
    for ws in (4, 8):
        raw = dump_report(generate_report("deepseek_v4_pro", "GB300", "NVFP4", ws, [1, 8, 64, 512]))
        meta = UploadMeta(trtllm_version="v1.3.0rc26-synthetic", synthetic=True)
        store.ingest(parse_upload(raw, meta, f"ws{ws}.json"), raw, meta)
    return store


@pytest.fixture
def api(db_url: str, seeded: Store) -> Iterator[TestClient]:
    yield from _client(db_url, seeded)


@pytest.fixture
def page(seeded: Store) -> Any:
    return create_dash(DashData(seeded, version_ttl=0.0))


def callback(app: Any, output: str) -> Callable[..., Any]:
    """The function the app registered for ``output`` ("<id>.<property>")."""
    entry = next(v for k, v in app.callback_map.items() if output in k.split(".."))
    fn: Callable[..., Any] = entry["callback"].__wrapped__
    return fn


def by_test_id(tree: Any, test_id: str) -> Any:
    return next(c for c in walk(tree) if getattr(c, "data-testid", None) == test_id)


def cell_texts(tree: Any) -> list[list[str]]:
    """The text of every table row under ``tree``, cell by cell."""
    rows = [c for c in walk(tree) if type(c).__name__ == "Tr"]
    return [[str(td.children) for td in row.children] for row in rows]


# ------------------------------------------------------------------ pareto
def page_frontier(
    app: Any, data: DashData, cell: Cell, ws: int, phase: str
) -> set[tuple[int, int]]:
    figure, _ = callback(app, "pareto-graph.figure")(
        cell.key, ws, phase, "all", [], [], [], [], C.SCORE_MS, C.TOKENS_PER_S_PER_GPU, ["x", "y"]
    )
    frame = data.cell_frame(cell)
    keys = {
        int(round(k))
        for t in figure.data
        if str(t.name).startswith("Pareto frontier")
        for k in t.customdata[:, 0]
    }
    return {(int(frame.iloc[k][C.RUN_ID]), int(frame.iloc[k][C.CANDIDATE_INDEX])) for k in keys}


@pytest.mark.parametrize(
    ("cell", "ws", "phase"),
    [(KNOWN, 8, "decode"), (KNOWN, 8, "prefill"), (KNOWN, 4, "decode"), (OTHER, 4, "decode")],
)
def test_pareto_frontier_points_agree(
    api: TestClient, page: Any, cell: Cell, ws: int, phase: str
) -> None:
    data = page.server.config["MOEDASH_DATA"]
    # the page's own permalink, sent to the API as it is: one query language
    search = ParetoQuery(cell=cell, ws=ws, phase=phase).search()
    assert f"world_size={ws}" in search and "ws=" not in search.replace("world_size=", "")
    resp = api.get("/api/v1/pareto" + search)
    assert resp.status_code == 200, resp.text
    items = resp.json()["items"]
    from_api = {(p["run_id"], p["candidate_index"]) for p in items}
    assert from_api, "the seeded store has a frontier here"
    assert page_frontier(page, data, cell, ws, phase) == from_api


# ------------------------------------------------------------------ best
@pytest.mark.parametrize("grouping", ["dashboard", "bench_moe"])
@pytest.mark.parametrize("cell", [KNOWN, OTHER])
def test_best_winner_per_workload_agrees(
    api: TestClient, page: Any, cell: Cell, grouping: str
) -> None:
    body, _ = callback(page, "best-body.children")(cell.key, grouping, "all")
    grid = next(c for c in walk(body) if getattr(c, "id", None) == "best-grid")
    params = {"model": cell.model, "hardware": cell.hardware, "quant": cell.quant}
    items = api.get("/api/v1/best", params={**params, "grouping": grouping}).json()["items"]
    keys = [k for k in ("run_id", "world_size", "num_tokens", "parallel_mode", "dispatch",
                        "cuda_graph", "attn") if k in items[0]]  # fmt: skip

    def winners(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        return {tuple(r[k] for k in keys): tuple(r[k] for k in WINNER) for r in rows}

    assert len(items) == len(grid.rowData) > 0
    assert winners(grid.rowData) == winners(items)


# ------------------------------------------------------------------ recommend
def page_recommendation(app: Any, form: recommend.Form) -> dict[str, Any]:
    """What the Recommend page shows for ``form``, as the registered callback renders
    it: the tree's facts, the measured table's first row and the YAML text."""
    values = [form.hardware, form.model, form.quant, form.ws, form.attn, form.phase]
    body, _ = callback(app, "rec-body.children")(*values, form.tokens, form.th, None)
    facts = {row[0]: row[1] for row in cell_texts(by_test_id(body, "rec-summary"))}
    measured = next(
        (c for c in walk(body) if getattr(c, "data-testid", None) == "rec-measured"), None
    )
    first = cell_texts(measured)[1] if measured is not None else None  # [0] is the header
    words = " ".join(c for c in walk(body) if isinstance(c, str))
    yaml_text = next(c for c in walk(body) if getattr(c, "id", None) == "rec-yaml").children
    return {"facts": facts, "measured": first, "words": words, "yaml": yaml_text}


def api_params(form: recommend.Form) -> dict[str, Any]:
    return {
        "hardware": form.hardware,
        "model": form.model,
        "quant": form.quant,
        "world_size": form.ws,
        "attention": form.attn.lower(),
        "phase": form.phase,
        "num_tokens": form.tokens,
        "thresholds": form.th,
    }


def assert_same_recommendation(shown: dict[str, Any], body: dict[str, Any]) -> None:
    tree = body["tree"]
    assert shown["facts"]["backend"] == tree["backend"]
    assert shown["facts"]["MoE parallelism"].startswith(tree["parallel_mode"] + " ")
    comm = shown["facts"]["communication"]
    assert comm.startswith(tree["comm"] if tree["force_comm"] else "AUTO")
    measured = body["measured"]
    if measured is None:
        assert shown["measured"] is None
        return
    rank, backend, comm, mode = shown["measured"][:4]
    assert (rank, backend, mode) == ("1", measured["backend"], measured["parallel_mode"])
    assert comm == measured["expected_comm"]  # the candidate's own comm
    assert f"num_tokens = {measured['measured_num_tokens']} " in shown["words"]


@pytest.mark.parametrize("tokens", [1, 8, 40, 64, 100, 300, 1024, 5000])
@pytest.mark.parametrize("th", ["published", "derived"])
def test_recommendation_tree_and_measured_agree(
    api: TestClient, page: Any, tokens: int, th: str
) -> None:
    form = recommend.Form(tokens=tokens, th=th)
    body = api.get("/api/v1/recommendation", params=api_params(form)).json()
    assert body["measured"] is not None
    assert_same_recommendation(page_recommendation(page, form), body)


@pytest.mark.parametrize(
    "form",
    [
        recommend.Form(ws=4, attn="TP", tokens=64),
        recommend.Form(ws=8, phase="prefill", tokens=256),
        recommend.Form(hardware="B300", model="kimi_k2", ws=4, tokens=32),
        recommend.Form(hardware="B300", ws=16, tokens=256),  # tree only: nothing measured
    ],
)
def test_recommendation_agrees_beyond_the_default_form(
    api: TestClient, page: Any, form: recommend.Form
) -> None:
    body = api.get("/api/v1/recommendation", params=api_params(form)).json()
    assert_same_recommendation(page_recommendation(page, form), body)


# ------------------------------------------------------------------ export
@pytest.mark.parametrize(
    "form",
    [
        recommend.Form(tokens=300),
        recommend.Form(tokens=4096, th="derived"),
        recommend.Form(hardware="B300", ws=16, tokens=64),  # forced comm across NVLink
        recommend.Form(ws=4, attn="TP", phase="prefill", tokens=512),
    ],
)
def test_export_yaml_text_is_equal(api: TestClient, page: Any, form: recommend.Form) -> None:
    text = api.get("/api/v1/export", params=api_params(form)).text
    assert text.startswith("# moedash recommended MoE configuration")
    assert page_recommendation(page, form)["yaml"] == text
    data = page.server.config["MOEDASH_DATA"]
    download = recommend.download(data, "yaml", form)
    assert download is not None and download["content"] == text
    env = api.get("/api/v1/export", params={**api_params(form), "format": "env"}).text
    page_env = recommend.download(data, "env", form)
    assert page_env is not None
    assert env.strip() == (
        "" if page_env["content"].startswith("#") else page_env["content"].strip()
    )


# ------------------------------------------------------------------ the case
@pytest.fixture
def tie_store(store: Store) -> Store:
    seed_tie_sweep(store)
    return store


@pytest.fixture
def tie_api(db_url: str, tie_store: Store) -> Iterator[TestClient]:
    yield from _client(db_url, tie_store)


def test_equal_log_distance_picks_the_larger_workload_everywhere(
    tie_api: TestClient, tie_store: Store
) -> None:
    """A sweep at 64 and 256 tokens, asked for 128 (log2 distance 1 both ways): the API
    recommendation, the measured export and the Recommend page all answer 256 tokens /
    MEGAMOE_CUTEDSL (the page used to answer 64 / TRTLLM)."""
    form = recommend.Form(
        hardware=PARITY_CELL.hardware, model=PARITY_CELL.model, quant=PARITY_CELL.quant, tokens=128
    )
    body = tie_api.get("/api/v1/recommendation", params=api_params(form)).json()
    assert body["measured"]["measured_num_tokens"] == 256
    assert body["measured"]["backend"] == "MEGAMOE_CUTEDSL"
    export = tie_api.get("/api/v1/export", params={**api_params(form), "source": "measured"})
    assert "moe_config:\n  backend: MEGAMOE_CUTEDSL\n" in export.text
    assert "used 256" in export.text
    shown = page_recommendation(create_dash(DashData(tie_store, version_ttl=0.0)), form)
    assert "num_tokens = 256 (asked 128)" in shown["words"]
    assert shown["measured"][:2] == ["1", "MEGAMOE_CUTEDSL"]
    assert_same_recommendation(shown, body)
