"""Guards on the private Dash / Plotly hooks the first render relies on (dashboard/shell.py,
dashboard/app.py, dashboard/static_html.py, static/*.js). Each of them would degrade
silently on a Dash upgrade that drops it (a slower first view, a dropped focus ring), so
each is checked here against the installed Dash: a failure names the hook to replace.

* ``Dash._generate_scripts_html``: overridden to drop the DataTable bundle and swap the
  polyfill (the override must still be what renders the page's scripts);
* ``window._dashPlotlyJSURL``: read by dcc.Graph's loader (pinned to our bundle);
* the ``_dash-layout`` request: the inline script that starts plotly.js with it;
* the ``_dashprivate_pushstate`` event: how our StaticHtml links tell dcc.Location;
* the hand-built StaticHtml component class (Dash's Component protocol);
* the Dash CSS class names static/a11y.js selects;
* ``/_dash-layout`` answers by Referer: it says so to caches.
"""

from __future__ import annotations

import re
from pathlib import Path

import dash
import pytest

from dashboard.app import create_dash
from dashboard.static_html import El, StaticHtml
from db.store import Store
from service.frames import DashData

DASH_DIR = Path(dash.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
REGEN = "/static/vendor/regenerator-runtime.js"


def _bundle(*parts: str) -> str:
    return (DASH_DIR.joinpath(*parts)).read_text(encoding="utf-8", errors="replace")


def test_scripts_hook_is_still_the_one_dash_renders_the_page_with(duck: Store) -> None:
    assert callable(getattr(dash.Dash, "_generate_scripts_html", None)), (
        "Dash no longer has _generate_scripts_html: move trim_scripts (dashboard/shell.py) "
        "to Dash's public hooks"
    )
    html = (
        create_dash(DashData(duck), regenerator_js=REGEN)
        .server.test_client()
        .get("/")
        .get_data(as_text=True)
    )
    assert REGEN in html  # our override ran: the polyfill was swapped
    assert "polyfill@" not in html
    assert "dash_table/bundle" not in html


@pytest.mark.parametrize(
    ("bundle", "hook"),
    [
        # dcc.Graph asks this global for the plotly.js URL (dashboard/shell.plotly_head)
        (("dcc", "dash_core_components.js"), "_dashPlotlyJSURL"),
        # dcc.Location listens to this event (static/moedash-components.js dispatches it)
        (("dcc", "dash_core_components.js"), "_dashprivate_pushstate"),
        # the renderer fetches the layout from this path (dashboard/shell.plotly_early)
        (("dash-renderer", "build", "dash_renderer.min.js"), "_dash-layout"),
    ],
)
def test_installed_dash_still_has_the_hook(bundle: tuple[str, ...], hook: str) -> None:
    assert hook in _bundle(*bundle), f"{hook!r} is gone from dash/{'/'.join(bundle)}"


def test_every_dash_class_a11y_js_selects_exists_in_dash() -> None:
    script = (REPO / "static" / "a11y.js").read_text(encoding="utf-8")
    selected = set(re.findall(r"\.(dash-[A-Za-z0-9_-]+)", script))
    assert selected, "a11y.js selects no Dash class: update this guard"
    shipped = "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in (DASH_DIR / "dcc").glob("*.js")
        if not p.name.endswith(".map")
    )
    missing = sorted(c for c in selected if c not in shipped)
    assert not missing, f"Dash no longer renders {missing}; static/a11y.js selects them"


def test_static_html_component_follows_dashs_component_protocol() -> None:
    node = StaticHtml(El("p", "<b>&"), id="x", **{"data-testid": "t"})
    as_json = node.to_plotly_json()
    assert as_json["namespace"] == "moedash" and as_json["type"] == "StaticHtml"
    assert as_json["props"] == {"id": "x", "html": "<p>&lt;b&gt;&amp;</p>", "data-testid": "t"}
    # Dash walks layouts by these (ids of callbacks, children): our class must keep them
    assert list(node._traverse()) == []
    assert node.id == "x"


def test_layout_answers_vary_by_referer_and_are_not_stored(duck: Store) -> None:
    client = create_dash(DashData(duck)).server.test_client()
    answer = client.get("/_dash-layout", headers={"Referer": "http://127.0.0.1:8050/best"})
    assert answer.status_code == 200
    assert "Referer" in answer.headers.get("Vary", "")
    assert answer.headers["Cache-Control"] == "no-store"
    page = client.get("/best")  # other answers keep their own caching
    assert "Referer" not in page.headers.get("Vary", "")
