"""Recipe -> serving mapping -> export -> the recipe's values, on tests/fixtures/serving."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis import crossval_columns as cc
from analysis.export_roundtrip import (
    STATUS_AGREES,
    STATUS_DIFFERS,
    STATUS_NOT_MAPPED,
    export_values,
    mapped_shape,
    recipe_values,
    round_trip,
)
from analysis.serving_map import map_workloads
from ingest.serving_configs import import_directory, points_frame, recipe_configs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "serving"
MTP = "recipes/trtllm/h200/8k1k/mtp/c_ctx1_gen6_tep8_mtp3.yaml"


@pytest.fixture(scope="module")
def trip() -> tuple[pd.DataFrame, pd.DataFrame, dict[str, object]]:
    r = import_directory(FIXTURE)
    recipes = recipe_configs(r)
    w = map_workloads(points_frame(r), recipes)
    return w, round_trip(w, recipes), recipes  # type: ignore[return-value]


def _status(rt: pd.DataFrame, cf: str, phase: str) -> pd.Series:
    sel = rt[(rt[cc.CONFIG_FILE] == cf) & (rt[cc.PHASE] == phase)]
    assert len(sel) == 1
    return sel.iloc[0]


def test_every_trtllm_recipe_phase_agrees_or_says_why(trip: tuple) -> None:  # type: ignore[type-arg]
    _, rt, _ = trip
    assert set(rt["status"]) <= {STATUS_AGREES, STATUS_DIFFERS, STATUS_NOT_MAPPED}
    assert (rt["status"] == STATUS_AGREES).sum() == 11
    assert rt.loc[rt["status"] != STATUS_AGREES, "reason"].notna().all()
    # one (recipe, phase) per row
    assert not rt.duplicated([cc.CONFIG_FILE, cc.PHASE]).any()


def test_mtp_decode_recipe_agrees_on_requests_not_tokens(trip: tuple) -> None:  # type: ignore[type-arg]
    w, rt, recipes = trip
    assert _status(rt, MTP, "decode")["status"] == STATUS_AGREES
    row = w[(w[cc.CONFIG_FILE] == MTP) & (w[cc.PHASE] == "decode")].iloc[0].to_dict()
    shape = mapped_shape(row)
    assert not isinstance(shape, str)
    ours = export_values(shape)
    # 32 requests x (3 + 1) = 128 tokens: the graph counts the 32 requests
    assert ours["cuda_graph_config.max_batch_size"] == 32
    assert ours["max_num_tokens"] == 128
    assert ours["speculative_config.num_nextn_predict_layers"] == 3
    assert ours == recipe_values(recipes[MTP], "decode")  # type: ignore[arg-type]


def test_a_prefill_graph_config_is_listed_with_its_reason(trip: tuple) -> None:  # type: ignore[type-arg]
    _, rt, _ = trip
    row = _status(rt, "recipes/trtllm/b300-fp8/ctx1_gen1_dtp8.yaml", "prefill")
    assert row["status"] == STATUS_DIFFERS
    assert "cuda_graph: ours False, recipe True" in row["differences"]
    assert "prefill worker" in row["reason"]


def test_a_non_trtllm_recipe_is_not_mapped(trip: tuple) -> None:  # type: ignore[type-arg]
    _, rt, _ = trip
    row = _status(rt, "recipes/vllm/old/only-old.yaml", "decode")
    assert row["status"] == STATUS_NOT_MAPPED and "no separate engine config" in row["reason"]


def test_the_old_tokens_over_world_size_rule_would_fail_the_trip(trip: tuple) -> None:  # type: ignore[type-arg]
    # guard: the recipe's graph limit (32 requests) is not num_tokens / world_size
    # (32 x 4 = 128 tokens per rank under attention TP) -- the MTP bug of the old export
    w, _, recipes = trip
    theirs = recipe_values(recipes[MTP], "decode")  # type: ignore[arg-type]
    assert theirs is not None and theirs["cuda_graph_config.max_batch_size"] == 32
    row = w[(w[cc.CONFIG_FILE] == MTP) & (w[cc.PHASE] == "decode")].iloc[0]
    assert int(row["tokens_per_rank"]) != theirs["cuda_graph_config.max_batch_size"]
