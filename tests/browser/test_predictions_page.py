"""The /predictions page in real headless Chromium against a real `moedash serve`.

The store holds the demo generator's deepseek_v4_pro, glm_5 and kimi_k2 on GB300 · NVFP4 (world
size 8). What a person does: open the page for one cell, read the held-out regret
tables (units in every header) and what to measure next (a bench_moe command per row),
check them against the API, switch the interval confidence (the URL follows, with the
API's parameter names), download the held-out token counts and reopen the permalink.
The console stays clean. Saves artifacts/screenshots/predictions.png.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from db.store import open_store
from ingest.bench_moe import parse_bench_moe
from ingest.demo.generate import dump_report, generate_report
from ingest.records import UploadMeta
from service import predictions as S
from service import shared_answers as shared
from service.frames import DashData

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "artifacts" / "screenshots"
QUERY = "model=deepseek_v4_pro&hardware=GB300&quant=NVFP4"
TABLE = """(id) => Array.from(document.querySelectorAll(`[data-testid=${id}] tr`))
    .map(tr => Array.from(tr.children).map(td => td.innerText))"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.factories.servers import running_server

    db_url = f"duckdb:///{tmp_path_factory.mktemp('predictions') / 'store.duckdb'}"
    store = open_store(db_url)
    try:
        for model in ("deepseek_v4_pro", "glm_5", "kimi_k2"):
            raw = dump_report(
                generate_report(model, "GB300", "NVFP4", 8, tuple(2**j for j in range(13)))
            )
            meta = UploadMeta(hardware="GB300", filename=f"{model}.json")
            store.ingest(parse_bench_moe(raw, meta), raw, meta)
        # what a served app's warm-up does by default (MOEDASH_WARM_PREDICTIONS, off in
        # the tests): the cell's validation computed and shared before the first visit,
        # for both confidences the test reads (20-30 s of refits each on two cores)
        data = DashData(store)
        with shared.writing():
            for confidence in (0.9, 0.8):
                S.validation(data, "deepseek_v4_pro", "GB300", "NVFP4", confidence)
    finally:
        store.close()  # DuckDB: one process per file
    with running_server(db_url) as base:
        yield base


def _num(text: str) -> float | None:
    return None if text.strip() in ("—", "") else float(text)


def test_predictions_page_reads_like_the_api(
    server: str, page: Any, browser: Any, tmp_path: Path
) -> None:
    # the validation was shared before the server started (the fixture): read, not refitted
    page.goto(f"{server}/predictions?{QUERY}", wait_until="networkidle", timeout=120_000)
    page.locator("[data-testid=pred-token-summary]").wait_for(timeout=120_000)
    rows = page.evaluate(TABLE, "pred-token-summary")
    header, predicted = rows[0], rows[1]
    assert all("(%)" in h or "(count)" in h or h == "answer" for h in header), header
    api = page.request.get(f"{server}/api/v1/predictions/validation?{QUERY}").json()
    want = api["summary"]["predicted"]
    assert predicted[0] == "predicted pick"
    assert int(predicted[1]) == want["n"]
    assert _num(predicted[5]) == pytest.approx(want["worst_regret_pct"], rel=1e-3, abs=1e-4)
    coverage = page.locator("[data-testid=pred-token-coverage]").inner_text()
    assert f"{100 * api['summary']['coverage']:.4g} %" in coverage

    model_rows = page.evaluate(TABLE, "pred-model-summary")
    assert [r[0] for r in model_rows[1:4]] == [
        "predicted pick (shape model)", "published decision tree",
        "nearest model's winner (same workload)",
    ]  # fmt: skip
    lomo = api["leave_one_model_out"]["summary"]
    assert int(model_rows[2][1]) == lomo["tree"]["n"]

    nxt = page.evaluate(TABLE, "pred-next")
    assert "expected regret (%)" in nxt[0] and "bench_moe command" in nxt[0]
    assert len(nxt) - 1 == len(api["measure_next"]) > 0
    assert nxt[1][-1].strip().startswith(api["measure_next"][0]["command"][:40])
    assert page.locator("[data-testid=pred-next] .copy").count() == len(api["measure_next"])
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "predictions.png"), full_page=True)

    # another interval confidence: the URL says so with the API's parameter name
    page.get_by_label("80 %").check()
    page.wait_for_url("**confidence=0.8**", timeout=120_000)
    page.wait_for_function(
        "() => { const c = document.querySelector('[data-testid=pred-token-coverage]');"
        " return c && c.innerText.includes('80 %'); }",
        timeout=120_000,
    )

    with page.expect_download() as info:
        page.locator("#pred-csv-btn").click()
    name = "held-out-token-counts_deepseek_v4_pro_gb300_nvfp4.csv"
    assert info.value.suggested_filename == name
    path = tmp_path / name
    info.value.save_as(path)
    got = list(csv.DictReader(io.StringIO(path.read_text())))
    api80 = page.request.get(
        f"{server}/api/v1/predictions/validation?{QUERY}&confidence=0.8"
    ).json()
    assert len(got) == len(api80["items"])
    assert [int(r["held-out num_tokens (tokens)"]) for r in got] == [
        r["num_tokens"] for r in api80["items"]
    ]

    again = browser.new_page(viewport={"width": 1440, "height": 1000})
    again.on("pageerror", lambda e: page.errors.append(str(e)))
    again.goto(page.url, wait_until="networkidle")
    again.locator("[data-testid=pred-token-coverage]").wait_for(timeout=120_000)
    assert "80 %" in again.locator("[data-testid=pred-token-coverage]").inner_text()
    again.close()
    assert page.errors == [], page.errors
