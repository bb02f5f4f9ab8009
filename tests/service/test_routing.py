"""service.routing over a real store: the skewed run beside the balanced one
(``tests.factories.routing``), parameter checks, defaults and the one-pattern case."""

from __future__ import annotations

import pytest

from analysis import columns as C
from db.store import Store
from service.errors import InvalidQuery
from service.frames import DashData
from service.routing import SkewQuery, routing_skew, skew_json, skew_workloads
from tests.factories.routing import SKEWED, WORKLOAD, seed_skew


@pytest.fixture
def data(store: Store) -> DashData:
    seed_skew(store)
    return DashData(store, version_ttl=0.0)


def test_defaults_compare_balanced_with_the_stored_skewed_pattern(data: DashData) -> None:
    ans = routing_skew(data, SkewQuery(**WORKLOAD))
    assert ans.patterns == ["balanced", SKEWED]
    assert (ans.balanced, ans.skewed) == ("balanced", SKEWED)
    assert ans.comparison is not None and ans.message is None
    assert ans.comparison.summary["n_paired"] == 3
    assert ans.provenance["n_candidates"] == 7 and len(ans.provenance["run_ids"]) == 2
    assert ans.facts.local_batch == 16.0  # 256 tokens / 16 ranks
    assert ans.facts.activated_tokens_per_rank == 128.0  # 256 * 8 / 16
    assert [a.technique for a in ans.advice] == ["EPLB", "DWDP", "low_precision_combine"]
    assert ans.advice[0].verdict == "indicated"
    assert ans.filename == (
        "routing_skew_kimi_k2_GB300_NVFP4_ws16_256tok_decode_dp_balanced_vs_recv_hotspot.csv"
    )


def test_patterns_can_be_given_and_swapped(data: DashData) -> None:
    ans = routing_skew(data, SkewQuery(**WORKLOAD, balanced=SKEWED, skewed="balanced"))
    assert ans.comparison is not None
    slow = ans.comparison.table.set_index(C.BACKEND)
    # 1.0 ms balanced vs 1.5 skewed, read the other way round: 1.0 / 1.5 - 1
    assert slow.loc["TRTLLM"].iloc[0]["slowdown_pct"] == pytest.approx((1.0 / 1.5 - 1) * 100)


@pytest.mark.parametrize(
    ("change", "field", "listed"),
    [
        ({"model": "nope"}, "model", "kimi_k2"),
        ({"hardware": "B300"}, "hardware", "GB300"),
        ({"quant": "FP8"}, "quant", "NVFP4"),
        ({"world_size": 8}, "world_size", "16"),
        ({"num_tokens": 512}, "num_tokens", "256, 4096"),
        ({"num_tokens": 16384}, "num_tokens", "256, 4096"),  # prefill only
        ({"skewed": "local_only"}, "skewed", f"balanced, {SKEWED}"),
        ({"balanced": "perfect"}, "balanced", f"balanced, {SKEWED}"),
        ({"skewed": "balanced"}, "skewed", SKEWED),
    ],
)
def test_a_value_that_is_not_stored_names_the_parameter_and_the_stored_values(
    data: DashData, change: dict, field: str, listed: str
) -> None:
    with pytest.raises(InvalidQuery) as err:
        routing_skew(data, SkewQuery(**{**WORKLOAD, **change}))
    assert err.value.field == field and listed in err.value.msg


def test_one_stored_pattern_is_an_empty_comparison_not_an_error(data: DashData) -> None:
    ans = routing_skew(data, SkewQuery(**{**WORKLOAD, "attention": "tp"}))
    assert ans.patterns == ["balanced"] and ans.skewed is None
    assert ans.comparison is None and ans.advice == ()
    assert "only one routing pattern" in (ans.message or "")
    body = skew_json(ans)
    assert body["items"] == [] and body["summary"] is None and body["message"]
    assert ans.csv().startswith("configuration,")


def test_skew_workloads_lists_two_pattern_workloads_first(data: DashData) -> None:
    table = skew_workloads(data, SkewQuery(**WORKLOAD).cell)
    assert list(table["n_patterns"]) == [2, 2, 2, 1]
    assert table.iloc[-1]["attention"] == "tp"
    assert set(table.iloc[0]["patterns"].split(", ")) == {"balanced", SKEWED}


def test_json_answer_is_plain_values(data: DashData) -> None:
    body = skew_json(routing_skew(data, SkewQuery(**WORKLOAD)))
    first = body["items"][0]
    assert first["backend"] == "TRTLLM" and first["balanced_rank"] == 1
    assert first["skewed_rank"] == 3 and first["slowdown_pct"] == pytest.approx(50.0)
    last = body["items"][-1]
    assert last["skewed_rank"] is None and last["slowdown_pct"] is None
    assert body["workload"]["hardware"] == "GB300" and body["repeats"] == "median"
    assert body["advice"][0]["checks"][2]["met"] is None
