"""The page shell create_dash serves: language, skip link, landmarks, and which plotly.js
the page draws with (the vendored partial bundle, or Dash's own when there is none)."""

from __future__ import annotations

import re
from pathlib import Path

from dash import dcc, html

from dashboard import components as ui
from dashboard.app import create_dash, plotly_head
from db.store import Store
from moedash.assets import PLOTLY_BASIC, plotly_bundle
from service.frames import DashData

BUNDLE = "/static/vendor/plotly-basic.min.js?v=4.1.1"


def _index(duck: Store, plotly_js: str | None) -> str:
    app = create_dash(DashData(duck), plotly_js=plotly_js)
    return app.server.test_client().get("/").get_data(as_text=True)


def test_shell_declares_english_and_leads_with_a_skip_link(duck: Store) -> None:
    page = _index(duck, None)
    assert '<html lang="en">' in page
    body = page.split("<body>", 1)[1]
    # the skip link comes before the app: the first thing Tab reaches
    assert body.index('class="skip-link"') < body.index('id="react-entry-point"')
    assert re.search(r'<a class="skip-link" href="#page">Skip to main content</a>', body)
    # names and roles for Dash's own controls (static/a11y.js), served from /static
    assert re.search(
        r'<script defer src="/static/a11y.js\?v=[0-9a-f]{12}"></script>',
        page.split("</head>", 1)[0],
    )
    assert (Path(__file__).resolve().parents[2] / "static" / "a11y.js").is_file()


def test_layout_has_header_nav_and_a_focusable_main(duck: Store) -> None:
    layout = create_dash(DashData(duck)).layout()
    header = next(c for c in layout.children if isinstance(c, html.Header))
    nav = header.children
    assert isinstance(nav, html.Nav)
    assert nav.to_plotly_json()["props"]["aria-label"] == "pages"
    # <main> sits in the page-wide loading wrapper, which spins only for the router
    wrapper = next(c for c in layout.children if isinstance(c, dcc.Loading))
    assert wrapper.delay_show == 300
    assert wrapper.target_components == {"page": "children"}
    main = wrapper.children
    assert isinstance(main, html.Main)
    assert main.id == "page" and main.tabIndex == "-1"  # the skip link's target


def test_loading_is_delayed_and_keeps_the_old_content_visible() -> None:
    spinner = ui.loading(html.Div(id="x"), "x-loading")
    assert spinner.delay_show == 300 and spinner.id == "x-loading"
    assert spinner.overlay_style["visibility"] == "visible"
    assert "target_components" not in spinner.to_plotly_json()["props"]


def test_without_a_bundle_dash_keeps_its_own_plotly(duck: Store) -> None:
    page = _index(duck, None)
    assert "_dashPlotlyJSURL" not in page
    assert "plotly-basic" not in page
    assert plotly_head(None) == ""


def test_with_a_bundle_dash_is_pinned_to_it(duck: Store) -> None:
    page = _index(duck, BUNDLE)
    head = page.split("</head>", 1)[0]
    assert "preload" not in head and f'src="{BUNDLE}"' not in head  # fetched on demand
    # dcc.Graph's loader reads window._dashPlotlyJSURL; the renderer's write is ignored
    assert "Object.defineProperty(window, '_dashPlotlyJSURL'" in head
    assert f'return "{BUNDLE}";' in head
    # the URL is escaped in the script, never raw
    odd = plotly_head('/x.js?a="b"</script>')
    assert 'return "/x.js?a=\\"b\\"\\u003c/script>";' in odd
    assert odd.count("</script>") == 1  # the pin's own


def test_plotly_bundle_only_when_present_and_the_same_version(tmp_path: Path) -> None:
    assert plotly_bundle(None, "4.1.1") is None
    assert plotly_bundle(tmp_path, "4.1.1") is None  # not fetched
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    (vendor / PLOTLY_BASIC.filename).write_text(
        "/**\n* plotly.js (basic - minified) v4.1.1\n* Copyright\n*/\n(function(){})();\n"
    )
    assert plotly_bundle(tmp_path, "4.1.1") == BUNDLE
    # plotly.py drawing for another plotly.js: the partial bundle would not match
    assert plotly_bundle(tmp_path, "4.2.0") is None
    assert plotly_bundle(tmp_path, "4.1") is None


def test_attrs_spells_data_and_aria_attributes_as_html_names() -> None:
    props = html.Div(**ui.attrs(data_testid="x", aria_label="a name")).to_plotly_json()["props"]
    assert props == {"children": None, "data-testid": "x", "aria-label": "a name"}
