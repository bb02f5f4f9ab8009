"""The page shell's first view: the page is laid out with Dash's layout (no router round
trip), Dash's polyfill is replaced by regenerator-runtime when it is vendored, and the
DataTable loader is not linked."""

from __future__ import annotations

import json
import re

from dashboard.app import create_dash
from dashboard.shell import static_url, trim_scripts
from db.store import Store
from ingest.records import UploadMeta
from service.frames import DashData
from tests.factories import sweeps

REGEN = "/static/vendor/regenerator-runtime.js?v=0.14.1"


def _seeded(duck: Store) -> DashData:
    duck.ingest(
        [sweeps.make_sweep(6, seed=1, hardware="GB300", world_size=8)],
        b"shell-bytes",
        UploadMeta(hardware="GB300", filename="shell.json"),
    )
    return DashData(duck, version_ttl=0.0)


def _layout(app: object, referer: str | None, host: str = "127.0.0.1:8050") -> dict:
    client = app.server.test_client()  # type: ignore[attr-defined]
    headers = {"Host": host} | ({"Referer": referer} if referer else {})
    return json.loads(client.get("/_dash-layout", headers=headers).get_data(as_text=True))


def _find(tree: object, cid: str) -> dict | None:
    if isinstance(tree, dict):
        if tree.get("props", {}).get("id") == cid:
            return tree
        for value in tree.values():
            if (got := _find(value, cid)) is not None:
                return got
    elif isinstance(tree, list):
        for value in tree:
            if (got := _find(value, cid)) is not None:
                return got
    return None


def test_layout_holds_the_page_its_referer_names(duck: Store) -> None:
    app = create_dash(_seeded(duck))
    layout = _layout(app, "http://127.0.0.1:8050/best?dispatch=balanced")
    main = _find(layout, "page")
    assert main is not None and main["props"]["children"] is not None
    assert _find(layout, "best-grid") is not None  # the Best page itself
    drawn = _find(layout, "page-drawn")
    assert drawn is not None and drawn["props"]["data"] == "/best?dispatch=balanced"


def test_layout_without_a_usable_referer_leaves_the_page_to_the_router(duck: Store) -> None:
    app = create_dash(_seeded(duck))
    for referer in (
        None,
        "http://127.0.0.1:8050/no-such-page",
        "javascript:alert(1)",
    ):
        layout = _layout(app, referer)
        assert _find(layout, "page")["props"].get("children") is None, referer  # type: ignore[index]
        assert _find(layout, "page-drawn")["props"].get("data") is None, referer  # type: ignore[index]


def test_behind_a_proxy_the_public_host_in_the_referer_is_fine(duck: Store) -> None:
    app = create_dash(_seeded(duck))
    layout = _layout(app, "https://moedash.example.org/best", host="app:8000")
    assert _find(layout, "best-grid") is not None


def test_router_keeps_the_laid_out_page_once_then_renders_every_navigation(duck: Store) -> None:
    app = create_dash(_seeded(duck))
    route = app.callback_map["..page.children...page-drawn.data.."]["callback"]

    def call(pathname: str, search: str, drawn: str | None) -> list:
        body = {
            "inputs": [
                {"id": "url", "property": "pathname", "value": pathname},
                {"id": "url", "property": "search", "value": search},
            ],
            "state": [{"id": "page-drawn", "property": "data", "value": drawn}],
        }
        with app.server.test_request_context("/_dash-update-component", json=body):
            out = route(
                pathname,
                search,
                drawn,
                outputs_list=[
                    {"id": "page", "property": "children"},
                    {"id": "page-drawn", "property": "data"},
                ],
            )
        return json.loads(out)["response"] if isinstance(out, str) else out

    # first call after a layout that holds /best: nothing re-rendered, the marker cleared
    first = call("/best", "?dispatch=balanced", "/best?dispatch=balanced")
    assert "page" not in first and first["page-drawn"]["data"] is None
    # a later visit of the same URL (back from another page) renders it
    again = call("/best", "?dispatch=balanced", None)
    assert again["page"]["children"] is not None


def test_polyfill_replaced_only_when_regenerator_runtime_is_vendored(duck: Store) -> None:
    data = DashData(duck)
    plain = create_dash(data).server.test_client().get("/").get_data(as_text=True)
    assert "polyfill@" in plain and "regenerator-runtime" not in plain
    lean = create_dash(data, regenerator_js=REGEN).server.test_client().get("/")
    html = lean.get_data(as_text=True)
    assert "polyfill@" not in html
    scripts = re.findall(r'<script src="([^"]+)"', html)
    # before React: the renderer's components call regeneratorRuntime as they load
    assert scripts.index(REGEN) < next(i for i, s in enumerate(scripts) if "/react@" in s)
    # our component after React, before the renderer starts
    comp = static_url("moedash-components.js")
    assert comp in scripts and html.index(comp) < html.index('id="_dash-renderer"')
    assert all("dash_table" not in s for s in scripts)


def test_trim_scripts_escapes_the_url_and_leaves_other_tags() -> None:
    tags = (
        '<script src="/_dash-component-suites/dash/deps/polyfill@7.v4.min.js"></script>\n'
        '<script src="/_dash-component-suites/dash/deps/react@18.v4.min.js"></script>\n'
        '<script src="/_dash-component-suites/dash/dash_table/bundle.v7.js"></script>\n'
    )
    out = trim_scripts(tags, '/x.js?a="b"')
    assert out.startswith('<script src="/x.js?a=&quot;b&quot;"></script>')
    assert "react@18" in out and "dash_table" not in out
    assert trim_scripts(tags, None).count("polyfill@") == 1


def test_chart_pages_start_plotly_with_the_layout_request(duck: Store) -> None:
    bundle = "/static/vendor/plotly-basic.min.js?v=4.1.1"
    client = create_dash(DashData(duck), plotly_js=bundle).server.test_client()
    pareto = client.get("/pareto").get_data(as_text=True)
    head = pareto.split("</head>", 1)[0]
    assert "indexOf('_dash-layout')" in head and f'}})("{bundle}");</script>' in head
    # dcc.Graph's loader waits on the same load instead of starting a second one
    assert "window.Plotly = new Promise" in head
    for page in ("/", "/best"):
        assert "_dash-layout" not in client.get(page).get_data(as_text=True)
    without = create_dash(DashData(duck)).server.test_client().get("/pareto")
    assert "window.Plotly = new Promise" not in without.get_data(as_text=True)
