"""The /history page without a browser: layout and defaults, the registered callback
(score over versions, frontier overlay, frontier change numbers), empty states and the
CSV download, on a real DuckDB store seeded with the three-version sweeps of
tests/factories/version_sweeps.py (known scores and frontiers)."""

from __future__ import annotations

from typing import Any

import pytest
from dash import html

from analysis import columns as C
from dashboard.app import PAGES, create_dash, render_page
from dashboard.pages import history as P
from dashboard.pages import history_form as F
from dashboard.pages import history_slices as S
from db.store import Store
from service.frames import DashData
from tests.factories import version_sweeps as V
from tests.factories.dashboard import by_id, by_testid, callback, text, walk

DECODE = {**V.SLICE, "phase": "decode"}
VERSIONS = [V.RC9, V.RC27, V.RC28]


@pytest.fixture(scope="module")
def data(module_duck: Store) -> DashData:
    V.seed_versions(module_duck)
    return DashData(module_duck, version_ttl=0.0)


def controls(**form: Any) -> list[Any]:
    """The values the page's controls send, in callback order ("all" for unset)."""
    f = F.Form(**form)
    return [getattr(f, k) if getattr(f, k) is not None else F.ALL for k in F.FIELDS]


def test_page_is_registered_with_labelled_controls_and_defaults(data: DashData) -> None:
    assert PAGES["/history"].module is P and PAGES["/history"].nav
    page = render_page(data, "/history", "")
    # no URL: the slice with the most versions (decode before prefill on a tie)
    want = {**DECODE}
    assert {k: by_id(page, f"hist-{k}").value for k in want} == want
    assert (by_id(page, "hist-base").value, by_id(page, "hist-head").value) == (V.RC27, V.RC28)
    assert [o["value"] for o in by_id(page, "hist-base").options] == VERSIONS
    assert "3 versions" in by_id(page, "hist-model").options[0]["label"]
    assert [o["value"] for o in by_id(page, "hist-num_tokens").options] == [F.ALL, 256, 4096]
    labelled = {getattr(c, "htmlFor", None) for c in walk(page) if isinstance(c, html.Label)}
    assert set(P.IDS) <= labelled
    # a URL naming only the model still lands on a stored slice of it
    page = render_page(data, "/history", f"?model={V.MODEL}&phase=prefill")
    assert by_id(page, "hist-phase").value == "prefill"
    assert by_id(page, "hist-world_size").value == V.WORLD_SIZE


def test_best_per_workload_over_versions_in_version_order(data: DashData) -> None:
    app = create_dash(data)
    out = callback(app, "hist-body.children")(*controls(**DECODE, base=V.RC27, head=V.RC28))
    body, search = out[:2]
    assert search == (
        f"?model={V.MODEL}&hardware={V.HARDWARE}&quant={V.QUANT}&world_size={V.WORLD_SIZE}"
        f"&phase=decode&base={V.RC27}&head={V.RC28}"
    )
    fig = by_id(body, "hist-graph").figure
    # rc9 before rc27 although "rc9" > "rc27" as text
    assert list(fig.layout.xaxis.categoryarray) == VERSIONS
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {
        "256 tok · decode · balanced · attention DP",
        "4096 tok · decode · balanced · attention DP",
    }
    at256 = by_name["256 tok · decode · balanced · attention DP"]
    # the best at 256 tokens: TRTLLM 1.00 ms until rc28, where CUTEDSL (1.10 ms) wins
    assert list(at256.x) == VERSIONS and list(at256.y) == pytest.approx([1.0, 1.0, 1.1])
    assert at256.text[-1].startswith("CUTEDSL")
    assert fig.layout.yaxis.title.text == "latency, score (ms)"
    assert V.MODEL in fig.layout.title.text and "8 GPUs" in fig.layout.title.text
    assert "3 versions" in text(by_testid(body, "hist-summary"))


def test_one_configuration_of_one_workload(data: DashData) -> None:
    config = "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1"
    out = P.update(data, *controls(**DECODE, num_tokens=256, config=config))
    body = out[0]
    (trace,) = by_id(body, "hist-graph").figure.data
    assert list(trace.y) == pytest.approx([1.0, 1.0, 1.2])
    rows = by_id(body, "hist-grid").rowData
    assert [r["change_pct_vs_prev"] for r in rows][1:] == pytest.approx([0.0, 20.0])
    # the config list is the chosen workload's
    config_opts = [o["value"] for o in out[6 + 7]]
    assert config in config_opts and len(config_opts) == 1 + 4


def test_frontier_overlay_and_change_numbers(data: DashData) -> None:
    body = P.update(data, *controls(**DECODE, base=V.RC27, head=V.RC28))[0]
    fig = by_id(body, "hist-frontier-graph").figure
    assert [t.name for t in fig.data] == VERSIONS
    rc27 = fig.data[1]
    assert list(rc27.x) == pytest.approx([1.0, 2.0])
    assert list(rc27.y) == pytest.approx([32000.0, 256000.0])
    assert fig.layout.xaxis.type == "log" and "tokens/s/GPU" in fig.layout.yaxis.title.text
    numbers = text(by_testid(body, "hist-fc-numbers"))
    # step frontiers rc27 (1.0 ms, 32000), (2.0, 256000) and rc28 (1.1, 29090.9),
    # (1.8, 284444.4): throughput at 1.1 / 1.8 / 2.0 ms changes -9.09 / +788.9 / +11.1 %
    assert "throughput change at fixed latency" in numbers and "+11.11 %" in numbers
    assert "tokens/s/GPU" in numbers and "ms·tokens/s/GPU" in numbers
    assert "reference point 2.2 ms" in numbers
    at_latency = by_id(body, "hist-fc-latency").rowData
    assert [r["latency_ms"] for r in at_latency] == pytest.approx([1.1, 1.8, 2.0])
    assert at_latency[-1]["change_pct"] == pytest.approx(100 * (284444.444 / 256000 - 1), 1e-5)


def test_slice_change_drops_what_it_does_not_hold(data: DashData) -> None:
    values = controls(**DECODE, num_tokens=4096, base=V.RC9, head=V.RC28)
    values[4] = "prefill"
    out = P.update(data, *values, trigger="hist-phase")
    # prefill holds 16384 tokens only: the workload goes back to every workload
    assert out[2] == F.ALL
    assert (out[4], out[5]) == (V.RC9, V.RC28)


def test_one_version_says_what_to_upload(duck: Store) -> None:
    V.seed_versions(duck, ("rc28",))
    data = DashData(duck, version_ttl=0.0)
    page = render_page(data, "/history", "")
    body = P.update(data, *[by_id(page, i).value for i in P.IDS])[0]
    box = by_testid(body, "hist-fc-empty")
    assert box is not None and "--trtllm-version" in text(box)
    assert "single point" in text(by_testid(body, "hist-one-version"))


def test_empty_database(duck: Store) -> None:
    page = render_page(DashData(duck, version_ttl=0.0), "/history", "")
    assert "moedash upload" in text(by_testid(page, "hist-empty"))


def test_csv_download_holds_the_chart_points(data: DashData) -> None:
    got = P.csv_download(data, F.make_form(*controls(**DECODE, num_tokens=256)))
    assert got is not None
    assert got["filename"] == "history-best-deepseek_v4_pro-gb300-nvfp4-ws8-decode-256tok.csv"
    header, *rows = got["content"].splitlines()
    assert C.TRTLLM_VERSION in header.split(",") and len(rows) == 3


def test_one_point_per_run_of_one_configuration(data: DashData) -> None:
    config = "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1"
    # run by run needs one configuration: the best per workload is per version
    body = P.update(data, *controls(**DECODE, by="run"))[0]
    assert by_testid(body, "hist-pick-config") is not None
    out = P.update(data, *controls(**DECODE, num_tokens=256, config=config, by="run"))
    assert out[1].endswith("&by=run")
    fig = by_id(out[0], "hist-graph").figure
    (trace,) = fig.data
    # four runs in version order; rc27's two repeat runs are separate points now
    assert list(trace.x) == [
        "1.2.0rc9 · run 1 · 2026-08-01 · c0ffee0",
        "1.2.0rc27 · run 2 · 2026-09-01 · c0ffee1",
        "1.2.0rc27 · run 3 · 2026-09-02 · c0ffee2",
        "1.2.0rc28 · run 4 · 2026-09-15 · c0ffee3",
    ]
    assert list(trace.y) == pytest.approx([1.0, 1.0, 1.0, 1.2])
    assert "run" in fig.layout.xaxis.title.text


def test_a_slice_not_stored_says_so(data: DashData) -> None:
    body = P.update(data, *controls(**{**DECODE, "world_size": 4}))[0]
    box = by_testid(body, "hist-invalid")
    assert box is not None and "No runs of deepseek_v4_pro · GB300 · NVFP4 · 4 GPUs" in text(box)
    page = render_page(data, "/history", f"?model=nope&hardware={V.HARDWARE}")
    assert "nope (not stored)" in [o["label"] for o in by_id(page, "hist-model").options]


def test_slice_table_counts_versions_and_runs(data: DashData) -> None:
    table = S.slice_table(data)
    assert table[["phase", "n_versions", "n_runs"]].values.tolist() == [
        ["decode", 3, 4],
        ["prefill", 3, 4],
    ]
    assert S.is_stored(data, {**DECODE}) and not S.is_stored(data, {**DECODE, "world_size": 4})
    opts = S.with_asked([{"label": "a", "value": "a"}], "a", "b", None, "b")
    assert [o["value"] for o in opts] == ["a", "b"] and opts[1]["label"] == "b (not stored)"
