"""The threshold read path (``service.thresholds``, ``service.threshold_slice``) on a real
store seeded with known answers (``tests.factories.thresholds.seed_threshold_store``)."""

from __future__ import annotations

import json

import pytest

from analysis import columns as C
from analysis.tree import Thresholds
from db.store import Store
from service.errors import InvalidQuery
from service.frames import DashData
from service.threshold_slice import ThresholdSlice, threshold_slice
from service.thresholds import (
    derived_thresholds,
    guide_check,
    threshold_report,
    threshold_table,
    tree_download,
    tree_thresholds,
    validated_thresholds,
)
from tests.factories import thresholds as TF

DECODE = "decode_megamoe_tokens_per_rank"


@pytest.fixture
def data(store: Store) -> DashData:
    TF.seed_threshold_store(store)
    return DashData(store, version_ttl=0.0)


def test_slice_is_checked_against_the_store(data: DashData) -> None:
    with pytest.raises(InvalidQuery) as err:
        threshold_slice(data, model="nope")
    assert err.value.field == "model"
    assert "allowed: model_a, model_b, model_c, model_d" in err.value.msg
    with pytest.raises(InvalidQuery, match="allowed: B300, GB300") as hw:
        threshold_slice(data, hardware="h100")
    assert hw.value.field == "hardware"
    with pytest.raises(InvalidQuery, match="dispatch"):
        threshold_slice(data, dispatch="recv_hotspot")
    s = threshold_slice(data, model="", hardware="b300")
    assert s == ThresholdSlice(hardware="B300") and s.stem == "B300"
    assert ThresholdSlice().label == "all stored data" and ThresholdSlice().stem == "all"


def test_empty_store_refuses_filters_but_answers_unfiltered(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    with pytest.raises(InvalidQuery, match="nothing is stored yet"):
        threshold_slice(data, model="x")
    table = threshold_table(data)
    assert len(table) == 5 and set(table["verdict"]) == {"not enough data"}
    assert tree_thresholds(data, "validated") == Thresholds()


def test_pooled_and_per_slice_answers(data: DashData) -> None:
    pooled = threshold_table(data).set_index("name").loc[DECODE]
    assert pooled["n_points"] == 42 + 42 + 40 + len(TF.GRID) and pooled["n_models"] == 4
    only_c = threshold_table(data, s=threshold_slice(data, model="model_c")).set_index("name")
    assert only_c.loc[DECODE, "n_points"] == 40
    assert (only_c.loc[DECODE, "bracket_lo"], only_c.loc[DECODE, "bracket_hi"]) == (512, 640)
    b300 = threshold_table(data, s=threshold_slice(data, hardware="B300")).set_index("name")
    assert (b300.loc[DECODE, "bracket_lo"], b300.loc[DECODE, "bracket_hi"]) == (512, 1024)
    by_model = threshold_table(data, by=C.MODEL)
    assert set(by_model[by_model["name"] == DECODE]["group"]) == {
        "model_a",
        "model_b",
        "model_c",
        "model_d",
    }
    ev = threshold_table(data, evidence=True)
    assert set(ev["name"]) >= {DECODE} and {"axis_value", "winner", "margin_pct"} <= set(ev.columns)


def test_threshold_sets(data: DashData) -> None:
    assert tree_thresholds(data, "published") == Thresholds()
    derived = derived_thresholds(data)
    assert derived.decode_megamoe_tokens_per_rank > 512
    assert tree_thresholds(data, "derived") == derived
    # model_c gets worse out of sample: the validated set keeps 512
    assert validated_thresholds(data).decode_megamoe_tokens_per_rank == 512
    trees = threshold_report(data).trees
    summary = trees.summary.set_index([C.MODEL, C.HARDWARE, C.PHASE])
    c = summary.loc[("model_c", "GB300", "decode")]
    assert (c["agreement_pct_published"], c["agreement_pct_validated"]) == (72.5, 72.5)
    assert c["agreement_pct_derived"] < 72.5


def test_cached_per_store_version(data: DashData) -> None:
    first = threshold_report(data)
    assert threshold_report(data) is first and guide_check(data) is first.check
    TF.store_frame(data.store, TF.decode_frame({"model_e": 3000}), "more")
    again = threshold_report(data)
    assert again is not first and again.check.table.set_index("name").loc[DECODE, "n_models"] == 5


def test_tree_downloads(data: DashData) -> None:
    s = threshold_slice(data, model="model_c")
    text = tree_download(data, s, "derived", "text")
    assert text.filename == "moedash-tree-model_c-derived.txt" and text.media_type.startswith(
        "text/plain"
    )
    assert "# slice: model=model_c" in text.content
    assert "activated_tokens_per_rank <= 572.4  [derived; 95% CI" in text.content
    js = tree_download(data, s, "validated", "json")
    body = json.loads(js.content)
    assert js.filename == "moedash-tree-model_c-validated.json"
    assert body["slice"]["model"] == "model_c" and body["thresholds"] == "validated"
    assert body["values"][DECODE]["published"] == 512 and body["method"]["resamples"] == 2000
    assert body["tree"][1]["step"] == "STEP2: Backend"
    pub = tree_download(data, None, "published", "text").content
    assert "activated_tokens_per_rank <= 512\n" in pub  # no notes on the published tree
