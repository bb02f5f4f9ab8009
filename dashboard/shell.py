"""The page shell: the HTML every page starts from, and what it loads before Dash draws.

What a first visit costs the browser, and what is done about it here (measured with
``bench/first_render.py``; profile notes in docs/performance.md):

* **No polyfill**: Dash links ``@babel/polyfill`` (core-js 2 and regenerator-runtime)
  for old browsers; evaluating it costs 80-200 ms of main thread on 2 cores. A browser
  that runs Dash 4's renderer at all has all of core-js natively; the one thing Dash's
  components still need is ``regeneratorRuntime``. When ``make assets`` vendored
  regenerator-runtime (moedash.assets), the shell links that (25 KB) in the polyfill's
  place; without it the polyfill stays.
* **No DataTable bundle**: Dash always links dash_table's loader; no page uses it.
* **plotly.js while the server lays the page out**: on a page whose first view has a
  chart (``chart_paths``), :func:`plotly_early` starts loading the bundle the moment
  Dash's renderer asks for the layout, so its evaluation (300-500 ms on 2 cores) overlaps
  the server's work instead of following the chart's mount. Until it has run,
  ``window.Plotly`` is a promise of it: dcc.Graph's loader (``Promise.resolve(window.Plotly
  || load())``) waits for that instead of loading the bundle a second time. Loading it
  ``defer`` from the HTML was measured slower: it then runs before the renderer asks for
  the layout. Other pages load it when a chart first mounts.
* **moedash's own component** (``static/moedash-components.js``, see
  dashboard/static_html.py) is loaded after React and before the renderer starts.

Static files are linked with ``?v=`` and the first 12 hex digits of their content's
SHA-256, so browsers keep them until they change (api/entry_routes.py CacheHeaders).
"""

from __future__ import annotations

import hashlib
import html as _html
import json
import re
from collections.abc import Callable, Collection
from functools import cache
from pathlib import Path
from typing import Any

import dash
import flask

STATIC = Path(__file__).resolve().parent.parent / "static"

# The page shell: English, a skip link (first in the tab order, shown on focus) to the
# page's <main>, the navigation in a <header> landmark, static/a11y.js (names and roles
# for Dash's own controls: see that file). Dash's own placeholders stay; PLOTLY is
# replaced by plotly_head() (empty without a partial bundle), COMPONENTS by our
# component script (after React, which {%scripts%} loads, before {%renderer%} starts).
INDEX_STRING = """<!DOCTYPE html>
<html lang="en">
    <head>
        {%metas%}
        <title>{%title%}</title>
        {%favicon%}
        {%css%}
        <script defer src="A11Y"></script>
        <!--PLOTLY-->
    </head>
    <body>
        <a class="skip-link" href="#page">Skip to main content</a>
        {%app_entry%}
        <footer>
            {%config%}
            {%scripts%}
            <script src="COMPONENTS"></script>
            {%renderer%}
        </footer>
    </body>
</html>"""


@cache
def static_url(name: str) -> str:
    """``/static/NAME?v=<content hash>``; without a version when the file is missing."""
    path = STATIC / name
    if not path.is_file():
        return f"/static/{name}"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return f"/static/{name}?v={digest}"


def index_string(plotly_js: str | None) -> str:
    return (
        INDEX_STRING.replace("A11Y", static_url("a11y.js"))
        .replace("COMPONENTS", static_url("moedash-components.js"))
        .replace("<!--PLOTLY-->", plotly_head(plotly_js))
    )


def plotly_head(plotly_js: str | None) -> str:
    """``<head>`` markup that makes the page draw with the plotly.js bundle at
    ``plotly_js`` instead of the full one Dash ships: Dash's loader URL, which dcc.Graph
    reads when the first graph mounts, is pinned to it."""
    if not plotly_js:
        return ""
    url = json.dumps(plotly_js).replace("<", "\\u003c")  # no "</script>" in the script
    return (
        "<script>Object.defineProperty(window, '_dashPlotlyJSURL', "
        f"{{configurable: true, get: function () {{ return {url}; }}, "
        "set: function () {}});</script>"
    )


def plotly_early(plotly_js: str) -> str:
    """The inline script of the module docstring's second point."""
    url = json.dumps(plotly_js).replace("<", "\\u003c")
    return (
        "<script>(function (url) {\n"
        "  var fetch0 = window.fetch;\n"
        "  window.fetch = function (input) {\n"
        "    var target = typeof input === 'string' ? input : (input && input.url) || '';\n"
        "    if (target.indexOf('_dash-layout') !== -1) {\n"
        "      window.fetch = fetch0;\n"
        "      if (!window.Plotly) {\n"
        "        window.Plotly = new Promise(function (resolve, reject) {\n"
        "          var s = document.createElement('script');\n"
        "          s.src = url; s.async = true;\n"
        "          s.onload = function () { resolve(window.Plotly); };\n"
        "          s.onerror = function (e) { delete window.Plotly; reject(e); };\n"
        "          document.head.appendChild(s);\n"
        "        });\n"
        "      }\n"
        "    }\n"
        "    return fetch0.apply(this, arguments);\n"
        "  };\n"
        f"}})({url});</script>"
    )


_POLYFILL = re.compile(r'<script src="[^"]*/polyfill@[^"]*"></script>')
_DASH_TABLE = re.compile(r'<script src="[^"]*/dash_table/bundle[^"]*"></script>\n?')


def trim_scripts(scripts: str, regenerator_js: str | None) -> str:
    """Dash's script tags without the DataTable loader and, given the URL of
    regenerator-runtime, with that in place of ``@babel/polyfill``."""
    scripts = _DASH_TABLE.sub("", scripts)
    if regenerator_js:
        tag = f'<script src="{_html.escape(regenerator_js)}"></script>'
        scripts = _POLYFILL.sub(lambda _: tag, scripts, count=1)
    return scripts


class ShellDash(dash.Dash):
    """Dash with the shell above: scripts trimmed by :func:`trim_scripts`; on the paths in
    ``chart_paths`` the page's HTML carries :func:`plotly_early`."""

    def __init__(
        self,
        name: str | None = None,
        *,
        plotly_js: str | None,
        regenerator_js: str | None = None,
        chart_paths: Collection[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(name, index_string=index_string(plotly_js), **kwargs)
        self._moedash_regenerator_js = regenerator_js
        self._moedash_early = plotly_early(plotly_js) if plotly_js else None
        self._moedash_chart_paths = frozenset(chart_paths)

    def interpolate_index(self, *args: Any, **kwargs: Any) -> str:
        # Dash's method is unannotated; it returns the page's HTML
        base: Callable[..., str] = super().interpolate_index
        page = base(*args, **kwargs)
        if (
            self._moedash_early
            and flask.has_request_context()
            and (flask.request.path.rstrip("/") or "/") in self._moedash_chart_paths
        ):
            page = page.replace("</head>", self._moedash_early + "\n</head>", 1)
        return page

    def _generate_scripts_html(self) -> str:
        return trim_scripts(super()._generate_scripts_html(), self._moedash_regenerator_js)
