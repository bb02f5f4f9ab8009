"""The /thresholds page without a browser: layout, URL state, the registered callbacks,
downloads and empty states, on a real DuckDB store with known answers."""

from __future__ import annotations

import json
from typing import Any

import dash
import pytest

from dashboard.app import PAGES, create_dash, render_page
from dashboard.pages import thresholds as P
from db.store import Store
from service.frames import DashData
from tests.dashboard.labels_check import control_names, unnamed
from tests.factories import thresholds as TF
from tests.factories.dashboard import callback, walk


@pytest.fixture(scope="module")
def data(module_duck: Store) -> DashData:
    TF.seed_threshold_store(module_duck)
    return DashData(module_duck, version_ttl=0.0)


def ids(tree: Any) -> set[str]:
    return {getattr(c, "data-testid") for c in walk(tree) if getattr(c, "data-testid", None)}


def by_id(tree: Any, test_id: str) -> Any:
    return next(c for c in walk(tree) if getattr(c, "data-testid", None) == test_id)


def texts(tree: Any) -> str:
    return " ".join(c for c in walk(tree) if isinstance(c, str))


def test_registered_in_the_router_and_navigation() -> None:
    assert PAGES["/thresholds"].module is P and PAGES["/thresholds"].nav


def test_layout_shows_the_rule_and_keeps_the_url_state(data: DashData) -> None:
    page = render_page(
        data, "/thresholds", "?model=model_c&by=model&check=small_world_size&tree=validated"
    )
    assert "agrees only when p lies inside the interval" in by_id(page, "th-rule").children
    values = {c.id: c.value for c in walk(page) if getattr(c, "id", None) in P.CONTROLS}
    assert values == {
        "th-model": "model_c",
        "th-hardware": "all",
        "th-quant": "all",
        "th-dispatch": "all",
        "th-by": "model",
        "th-check": "small_world_size",
        "th-tree": "validated",
    }
    bogus = render_page(data, "/thresholds", "?model=nope&hardware=h100&by=zzz")
    dropped = texts(by_id(bogus, "th-dropped"))
    assert "model 'nope' is not stored" in dropped and "hardware 'H100'" in dropped
    assert next(c for c in walk(bogus) if getattr(c, "id", None) == "th-by").value == "none"
    names = control_names(page)
    assert {k: names[k] for k in P.CONTROLS} == {
        "th-model": "model",
        "th-hardware": "hardware",
        "th-quant": "precision",
        "th-dispatch": "dispatch pattern",
        "th-by": "breakdown",
        "th-check": "evidence for threshold",
        "th-tree": "re-derived tree",
    }
    assert unnamed(page) == []


def test_callback_renders_every_block_and_writes_the_url(data: DashData) -> None:
    app = create_dash(data)
    body, figure, config, search = callback(app, "th-body.children")(
        "model_c", "all", "all", "all", "model", "decode_megamoe_tokens_per_rank", "validated"
    )
    assert search == "?model=model_c&by=model&check=decode_megamoe_tokens_per_rank&tree=validated"
    assert ids(body) >= {
        "th-status",
        "th-table",
        "th-groups",
        "th-loo-empty",  # one model, one hardware: leave-one-out is not possible
        "th-agreement",
        "th-overall",
        "th-decisions",
        "th-tree-published",
        "th-tree-rederived",
    }
    table = texts(by_id(body, "th-table"))
    assert "decode_megamoe_tokens_per_rank" in table and "activated tokens per rank" in table
    assert figure.layout.xaxis.title.text == "activated tokens per rank (tokens)"
    assert figure.layout.yaxis.title.text == "winner's margin (%)"
    # title and PNG name: which threshold and the slice of its votes
    title = figure.layout.title.text
    assert title.startswith("model_c · GB300 · ") and "decode_megamoe_tokens_per_rank" in title
    stem = config["toImageButtonOptions"]["filename"]
    assert stem.startswith("evidence-for-decode_megamoe_tokens_per_rank-model_c-gb300-")
    assert "sendDataToCloud" in config["modeBarButtonsToRemove"]
    assert "[512, 1024)" not in figure.layout.title.text  # model_c's own interval
    assert by_id(body, "th-tree-published").children.count("<= 512") >= 1
    # model_c alone: one model, one hardware -> nothing validates, the set is published
    assert "<= 512" in by_id(body, "th-tree-rederived").children


def test_agreement_table_shows_both_trees_side_by_side(data: DashData) -> None:
    app = create_dash(data)
    body, _, _, _ = callback(app, "th-body.children")(
        "all", "all", "all", "all", "none", None, "derived"
    )
    rows = [c for c in walk(by_id(body, "th-agreement")) if type(c).__name__ == "Tr"]
    cells = {
        tuple(str(td.children) for td in r.children[:3]): [str(td.children) for td in r.children]
        for r in rows[2:]
    }
    c = cells[("model_c", "GB300", "decode")]
    # agreement %: published, derived, validated
    assert c[4:7] == ["72.5", "62.5", "72.5"]
    assert "kept published" in texts(by_id(body, "th-decisions"))


def test_downloads_are_named_for_the_slice(data: DashData) -> None:
    app = create_dash(data)
    fn = callback(app, "th-download.data")
    state = ("model_c", "all", "all", "all", "none", None, "derived")
    assert fn(0, 0, 0, *state) is dash.no_update  # the initial render clicks nothing
    txt = P.download(data, "text", *state)
    assert txt is not None and txt["filename"] == "moedash-tree-model_c-derived.txt"
    assert "STEP2: Backend" in txt["content"]
    js = P.download(data, "json", *state[:-1], "validated")
    assert js is not None and js["filename"] == "moedash-tree-model_c-validated.json"
    assert json.loads(js["content"])["slice"]["model"] == "model_c"
    table = P.download(data, "csv", *state)
    assert table is not None and table["filename"] == "moedash-thresholds-model_c.csv"
    assert table["content"].startswith("name,")
    assert P.download(data, "text", "nope", *state[1:]) is None


def test_empty_store_and_unknown_values(duck: Store) -> None:
    data = DashData(duck, version_ttl=0.0)
    app = create_dash(data)
    body, figure, _, _ = callback(app, "th-body.children")(*[None] * 7)
    assert ids(body) == {"th-empty"}
    assert "no comparison points" in figure.layout.annotations[0].text
    body, _, _, _ = callback(app, "th-body.children")("nope", None, None, None, None, None, None)
    assert ids(body) == {"th-invalid"} and "nothing is stored yet" in texts(body)


def test_the_first_answer_comes_with_the_layout_and_is_computed_once(data: DashData) -> None:
    page = render_page(data, "/thresholds", "?model=model_c")
    assert {"th-status", "th-table", "th-tree-rederived"} <= ids(page)  # no round trip first
    assert "model=model_c" in by_id(page, "th-status").children[-1]
    # the same view again (another visitor, or the callback) is the stored answer
    controls = ["model_c", "all", "all", "all", "none", None, "derived"]
    first = P.update(data, *controls)
    assert P.update(data, *controls)[0] is first[0]
    # the callback only runs on changes: the layout drew the first answer
    app = create_dash(data)
    entry = next(c for c in app._callback_list if "th-body.children" in c["output"])
    assert entry["prevent_initial_call"] is True
