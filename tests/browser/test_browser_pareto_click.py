"""The core path in a real browser: click a drawn Pareto point -> its config -> download.

A `moedash serve` subprocess over the dashboard fixture (``tests.factories.dashboard``:
cell deepseek_v4_pro · GB300 · NVFP4, world size 8, decode candidates 0-3), driven by
headless Chromium. The mouse clicks the pixel where plotly drew the point: the position
comes from the rendered plot's axes (``_fullLayout.xaxis.d2p`` plus the plot-area
offset), so the click goes through plotly's own hit test -- WebGL (scattergl) for the
candidate cloud, SVG for the frontier -- and Dash's clickData, as a user's does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from db.store import open_store
from tests.factories.dashboard import seed_store
from tests.factories.servers import running_server

pytestmark = pytest.mark.browser

PARETO = "/pareto?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4&ws=8"
# (score_ms, tokens/s/GPU) of the fixture's decode candidates at world size 8:
# tokens / (score_ms / 1000) / 8
CANDIDATE_3 = (3.0, 1024 / 3.0e-3 / 8)  # MEGAMOE_CUTEDSL, dominated: only in a WebGL trace
CANDIDATE_2 = (2.0, 1024 / 2.0e-3 / 8)  # TRTLLM NVLINK_ONE_SIDED (forced), on the frontier


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = tmp_path_factory.mktemp("pareto-click") / "moedash.duckdb"
    url = f"duckdb:///{db}"
    store = open_store(url)
    ids = seed_store(store)
    store.close()  # DuckDB: one process per file; the server opens it next
    with running_server(url) as base:
        yield {"base": base, "known": ids["known"]}


def _open_pareto(pg: Any, base: str, extra: str = "") -> None:
    pg.goto(base + PARETO + extra)
    pg.wait_for_selector("[data-testid=pareto-count]", timeout=20_000)
    pg.wait_for_load_state("networkidle")
    # drawn: plotly has laid out the axes and every trace
    pg.wait_for_function(
        "() => { const gd = document.querySelector('.pareto-graph .js-plotly-plot');"
        " return gd && gd._fullLayout && gd._fullLayout.xaxis && gd.calcdata; }"
    )


def _pixel(pg: Any, x: float, y: float) -> tuple[float, float]:
    """Page coordinates of data point (x, y) in the drawn Pareto plot."""
    pos = pg.evaluate(
        """([x, y]) => {
            const gd = document.querySelector('.pareto-graph .js-plotly-plot');
            const fl = gd._fullLayout, box = gd.getBoundingClientRect();
            return [box.left + fl.xaxis._offset + fl.xaxis.d2p(x),
                    box.top + fl.yaxis._offset + fl.yaxis.d2p(y)];
        }""",
        [x, y],
    )
    return float(pos[0]), float(pos[1])


def _hover_text(pg: Any, x: float, y: float) -> str:
    px, py = _pixel(pg, x, y)
    pg.mouse.move(px, py)
    pg.wait_for_function(
        "() => (document.querySelector('.hoverlayer')?.textContent || '').length > 0"
    )
    return str(pg.evaluate("() => document.querySelector('.hoverlayer').textContent"))


def _click(pg: Any, x: float, y: float, expect: str) -> str:
    px, py = _pixel(pg, x, y)
    pg.mouse.click(px, py)
    detail = pg.locator("[data-testid=pareto-point-detail]")
    detail.wait_for(timeout=10_000)
    pg.wait_for_function(
        "(t) => document.querySelector('[data-testid=pareto-point-detail]').innerText.includes(t)",
        arg=expect,
        timeout=10_000,
    )
    return str(detail.inner_text())


def _download(pg: Any, button: str) -> tuple[str, str]:
    with pg.expect_download() as info:
        pg.click(button)
    return info.value.suggested_filename, Path(info.value.path()).read_text()


def test_click_on_a_webgl_point_shows_its_config_and_downloads_the_api_yaml(
    server: dict[str, Any], page: Any
) -> None:
    base, known = server["base"], server["known"]
    _open_pareto(page, base)
    hover = _hover_text(page, *CANDIDATE_3)
    for text in (
        "MEGAMOE_CUTEDSL",
        "num_tokens: 1024 tokens",
        "world size 8 GPUs",
        "attention DP",
        "routing balanced",
    ):
        assert text in hover, hover
    panel = _click(page, *CANDIDATE_3, expect=f"Candidate 3 of run {known}")
    assert "MEGAMOE_CUTEDSL" in panel and "routing (dispatch pattern)\tbalanced" in panel
    assert f"point={known}%3A3" in page.url
    # the confidence panel says what the Best API says of this workload
    best = httpx.get(
        f"{base}/api/v1/best",
        params={"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4",
                "world_size": 8, "phase": "decode", "attention": "dp"},
    ).json()["items"]  # fmt: skip
    (row,) = [r for r in best if r["num_tokens"] == 1024]
    confidence = page.inner_text("[data-testid=pareto-confidence]")
    assert row["confidence"] in confidence and row["confidence_note"] in confidence

    name, body = _download(page, "#pareto-download-btn")
    assert name == f"moe_config_deepseek_v4_pro_GB300_NVFP4_ws8_1024tok_run{known}_cand3.yaml"
    api = httpx.get(f"{base}/api/v1/runs/{known}/candidates/3/export", params={"format": "yaml"})
    assert api.status_code == 200 and body == api.text
    assert name in api.headers["content-disposition"]
    cfg = yaml.safe_load(body)
    assert cfg["moe_config"]["backend"] == "MEGAMOE_CUTEDSL"
    assert cfg["moe_expert_parallel_size"] == 8 and cfg["enable_attention_dp"] is True
    assert page.inner_text("#pareto-yaml").strip() == body.strip()
    assert page.errors == []


def test_click_on_the_svg_frontier_point_gives_the_forced_comm_env_file(
    server: dict[str, Any], page: Any
) -> None:
    base, known = server["base"], server["known"]
    _open_pareto(page, base)
    assert "frontier" in _hover_text(page, *CANDIDATE_2)
    panel = _click(page, *CANDIDATE_2, expect=f"Candidate 2 of run {known}")
    assert "TRTLLM" in panel and "NVLINK_ONE_SIDED" in panel
    name, body = _download(page, "#pareto-env-btn")
    assert name == f"moe_config_deepseek_v4_pro_GB300_NVFP4_ws8_1024tok_run{known}_cand2.env"
    api = httpx.get(f"{base}/api/v1/runs/{known}/candidates/2/export", params={"format": "env"})
    assert body == api.text == "TRTLLM_FORCE_COMM_METHOD=NVLINK_ONE_SIDED\n"
    assert page.errors == []


def test_point_permalink_reopens_the_panel(server: dict[str, Any], page: Any) -> None:
    base, known = server["base"], server["known"]
    _open_pareto(page, base, f"&point={known}:3")
    page.wait_for_selector("[data-testid=pareto-point-detail]", timeout=10_000)
    assert f"Candidate 3 of run {known}" in page.inner_text("[data-testid=pareto-point-detail]")
    assert page.errors == []
