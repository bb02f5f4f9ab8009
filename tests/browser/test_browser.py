"""Real-browser tests: a `moedash serve` subprocess driven by headless Chromium.

The database is built in this process first (DuckDB allows one process per file), the
upload token is created then, and only afterwards is the server started.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from db.store import open_store
from ingest.records import UploadMeta
from tests.conftest import REPO
from tests.factories.dashboard import seed_store
from tests.factories.routing import seed_skew

pytestmark = pytest.mark.browser

SHOTS = REPO / "artifacts" / "screenshots"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _demo_upload(
    model: str, hardware: str, ws: int, tokens: list[int], seed: int
) -> tuple[bytes, UploadMeta]:
    from ingest.demo.generate import dump_report, generate_report

    report = generate_report(
        model, hardware, "NVFP4", ws, tokens, seed=seed, with_raw_samples=False
    )
    meta = UploadMeta(
        hardware=hardware,
        trtllm_version="v1.3.0rc26-synthetic",
        synthetic=True,
        filename=f"{model}_{hardware}_ws{ws}.json",
    )
    return dump_report(report), meta


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from ingest.detect import parse_upload

    db = tmp_path_factory.mktemp("browser") / "moedash.duckdb"
    url = f"duckdb:///{db}"
    store = open_store(url)
    ids = seed_store(store)
    seed_skew(store)  # kimi_k2 GB300: a skewed-routing run beside a balanced one
    raw, meta = _demo_upload("deepseek_v4_pro", "GB300", 8, [16, 64, 256, 1024, 4096, 16384], 1)
    store.ingest(parse_upload(raw, meta, meta.filename), raw, meta)
    _, secret = store.tokens.create_token("browser-test", ["upload"])
    store.close()
    port = _free_port()
    env = {**os.environ, "MOEDASH_DEMO_ON_EMPTY": "false"}
    log_path = db.parent / "server.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "moedash.cli",
            "serve",
            "--db",
            url,
            "--port",
            str(port),
            "--no-demo",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/api/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start:\n{log_path.read_text()}")
            time.sleep(0.3)
        yield {"base": base, "token": secret, "ids": ids}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _settle(pg: Any) -> None:
    pg.wait_for_load_state("networkidle")
    pg.wait_for_function("() => !document.querySelector('._dash-loading')")
    pg.wait_for_timeout(400)


def _trace_names(pg: Any) -> list[str]:
    """Names of the traces plotly actually drew in the Pareto graph."""
    return list(
        pg.evaluate(
            "() => document.querySelector('.pareto-graph .js-plotly-plot').data.map(t => t.name)"
        )
    )


def test_every_page_loads_without_console_errors(server: dict[str, Any], page: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    known = server["ids"]["known"]
    urls = {
        "overview": "/",
        "pareto": "/pareto?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4&ws=8",
        "best": "/best?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4",
        "run": f"/run?id={known}",
        "recommend": "/recommend?hardware=GB300&model=deepseek_v4_pro&quant=NVFP4&ws=8&tokens=1024",
        "routing": "/routing?model=kimi_k2&hardware=GB300&quant=NVFP4&ws=16&phase=decode"
        "&attn=dp&tokens=256",
        "agreement": "/agreement",
    }
    expect = {
        "overview": "[data-testid=coverage]",
        "pareto": "[data-testid=pareto-count]",
        "best": "[data-testid=best-count]",
        "run": "[data-testid=run-count]",
        "recommend": "[data-testid=rec-path]",
        "routing": "[data-testid=routing-advice-EPLB]",
        "agreement": "[data-testid=agreement-count]",
    }
    for name, url in urls.items():
        page.goto(server["base"] + url)
        page.wait_for_selector(expect[name], timeout=20_000)
        _settle(page)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    assert page.errors == []


def test_hostile_strings_render_as_text(server: dict[str, Any], page: Any) -> None:
    page.goto(server["base"] + f"/run?id={server['ids']['known']}")
    page.wait_for_selector("[data-testid=run-meta]")
    _settle(page)
    assert page.locator("script:has-text('alert')").count() == 0
    assert "<script>alert('x')</script>" in page.inner_text("[data-testid=run-meta]")
    assert page.errors == []


def test_filter_change_updates_pareto_and_permalink_restores(
    server: dict[str, Any], page: Any
) -> None:
    base = server["base"]
    page.goto(base + "/pareto?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4&ws=8")
    count = page.locator("[data-testid=pareto-count]")
    count.wait_for()
    _settle(page)
    before = count.inner_text()
    assert _trace_names(page)[-1] == "Pareto frontier (decode)"
    page.get_by_label("prefill (CUDA graph off)").check()
    page.wait_for_function(
        "(b) => document.querySelector('[data-testid=pareto-count]')?.innerText !== b",
        arg=before,
        timeout=20_000,
    )
    _settle(page)
    after = count.inner_text()
    assert after != before
    assert _trace_names(page)[-1] == "Pareto frontier (prefill)"
    assert "phase=prefill" in page.url
    permalink = page.url
    other = page.context.new_page()
    other.goto(permalink)
    other.wait_for_selector("[data-testid=pareto-count]")
    _settle(other)
    assert other.inner_text("[data-testid=pareto-count]") == after
    assert other.get_by_label("prefill (CUDA graph off)").is_checked()
    assert page.errors == []


def test_recommend_export_downloads_the_yaml(server: dict[str, Any], page: Any) -> None:
    page.goto(
        server["base"] + "/recommend?hardware=GB300&model=deepseek_v4_pro&quant=NVFP4"
        "&ws=8&attn=DP&phase=decode&tokens=1024"
    )
    page.wait_for_selector("#rec-yaml")
    _settle(page)
    with page.expect_download() as info:
        page.click("#rec-yaml-btn")
    body = Path(info.value.path()).read_text()
    assert body.startswith("# moedash recommended MoE configuration")
    cfg = yaml.safe_load(body)
    # 1024 * 6 / 8 = 768 activated tokens per rank > 512 -> the fused backend
    assert cfg["moe_config"] == {"backend": "MEGAMOE_CUTEDSL"}
    assert cfg["moe_expert_parallel_size"] == 8
    assert page.inner_text("#rec-yaml").strip() == body.strip()
    assert page.errors == []


def test_api_upload_appears_on_overview_without_restart(server: dict[str, Any], page: Any) -> None:
    raw, _ = _demo_upload("glm_5", "GB300", 16, [64, 1024], 7)
    resp = httpx.post(
        server["base"] + "/api/v1/runs",
        content=raw,
        params={"hardware": "GB300", "filename": "fresh-upload.json"},
        headers={"Authorization": f"Bearer {server['token']}", "Content-Type": "application/json"},
        timeout=60,
    )
    assert resp.status_code == 201, resp.text
    deadline = time.monotonic() + 10
    while True:  # the dashboard re-reads the store version at most once per second
        page.goto(server["base"] + "/")
        page.wait_for_selector("[data-testid=recent]")
        if "fresh-upload.json" in page.inner_text("[data-testid=recent]"):
            break
        assert time.monotonic() < deadline, "upload did not appear on the overview"
        time.sleep(0.5)
    assert "glm_5" in page.inner_text("[data-testid=coverage]")
    page.screenshot(path=str(SHOTS / "overview_after_upload.png"), full_page=True)
    assert page.errors == []


def test_routing_page_switches_workload_and_keeps_the_permalink(
    server: dict[str, Any], page: Any
) -> None:
    base = server["base"]
    page.goto(base + "/routing?model=kimi_k2&hardware=GB300&quant=NVFP4")
    page.wait_for_selector("[data-testid=routing-advice-EPLB]", timeout=20_000)
    _settle(page)
    assert "indicated" in page.inner_text("[data-testid=routing-advice-EPLB]")
    # pick the prefill workload: DWDP becomes the technique to test, EPLB does not apply
    page.click("#routing-workload")
    page.get_by_text("ws 16 · prefill · attention DP · 16384 tokens", exact=False).click()
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=routing-advice-DWDP]')?.innerText || '')"
        ".includes('worth testing')",
        timeout=20_000,
    )
    assert "tokens=16384" in page.url and "phase=prefill" in page.url
    with page.expect_download() as info:
        page.click("#routing-csv-btn")
    assert info.value.suggested_filename.endswith(
        "_16384tok_prefill_dp_balanced_vs_recv_hotspot.csv"
    )
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("[data-testid=routing-advice-DWDP]", timeout=20_000)
    assert "worth testing" in other.inner_text("[data-testid=routing-advice-DWDP]")
    assert page.errors == []
