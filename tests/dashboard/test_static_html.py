"""Server-rendered markup (dashboard.static_html): escaped text and attributes, safe
links, and the data table's cells."""

from __future__ import annotations

import pytest

from dashboard.static_html import El, StaticHtml, cell_text, data_table, link, table
from tests.factories.dashboard import HOSTILE, walk


def test_text_and_attributes_are_escaped() -> None:
    el = El("td", HOSTILE, title=HOSTILE, className='a"b')
    html = el.render()
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert 'class="a&quot;b"' in html
    assert list(el.texts()) == [HOSTILE]  # the text itself is kept, only escaped


@pytest.mark.parametrize("href", ["javascript:alert(1)", "//evil.example/x", "data:text/html,x"])
def test_links_must_be_relative_or_http(href: str) -> None:
    with pytest.raises(ValueError, match="href"):
        link("x", href).render()


def test_names_come_from_code_never_from_data() -> None:
    with pytest.raises(ValueError):
        El("td onclick=x")
    with pytest.raises(ValueError):
        El("td", **{"on click": "x"})


def test_nav_links_and_wildcards() -> None:
    html = El("p", [link("Pareto", "/pareto?model=a&ws=8"), El("br")], data_testid="t").render()
    assert html == (
        '<p data-testid="t"><a href="/pareto?model=a&amp;ws=8" data-nav="">Pareto</a><br></p>'
    )


def test_table_cells_and_component_props() -> None:
    comp = StaticHtml(table(["a", "b"], [[1, El("td", "x", className="c")]]), id="t1")
    props = comp.to_plotly_json()
    assert props["namespace"] == "moedash" and props["type"] == "StaticHtml"
    assert props["props"]["html"] == (
        '<table><thead><tr><th scope="col">a</th><th scope="col">b</th></tr></thead>'
        '<tbody><tr><td>1</td><td class="c">x</td></tr></tbody></table>'
    )
    assert [getattr(e, "tag", None) for e in walk(comp)][:2] == [None, "table"]


def test_data_table_formats_cells_and_keeps_its_records() -> None:
    rows = [{"m": "x", "n": 3, "f": 0.123456, "cuda_graph": True, "ok": False, "z": None}]
    comp = data_table("g", rows, ["m", "n", "f", "cuda_graph", "ok", "z"], {"m": "model"},
                      {"m": "the model"}, wrap=["m"], widths={"m": 150})  # fmt: skip
    assert comp.records == rows and comp.fields == ["m", "n", "f", "cuda_graph", "ok", "z"]
    html = comp.to_plotly_json()["props"]["html"]
    assert (
        '<th scope="col" title="the model" style="min-width:150px" data-col="m">model</th>' in html
    )
    assert '<td data-col="m" class="wrap">x</td>' in html
    assert '<td data-col="n" class="num">3</td>' in html
    assert '<td data-col="f" class="num">0.1235</td>' in html
    assert ">on</td>" in html and ">no</td>" in html and '<td data-col="z"></td>' in html
    assert cell_text(float("nan"), "x") == ""
