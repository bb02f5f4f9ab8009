"""Round trip of every srt-slurm TensorRT-LLM recipe in the shipped data: recipe -> our
serving mapping -> our export -> the recipe's own values (analysis.export_roundtrip)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import crossval_columns as cc
from analysis.export_roundtrip import (
    STATUS_AGREES,
    STATUS_DIFFERS,
    STATUS_NOT_MAPPED,
    round_trip,
)
from analysis.serving_map import map_workloads
from ingest.serving_configs import import_directory, points_frame, recipe_configs
from tests.realdata import require, shared_data_dir

pytestmark = pytest.mark.realdata

DATA = shared_data_dir()


@pytest.fixture(scope="module")
def trip() -> pd.DataFrame:
    require(DATA / "inferencex" / "configs" / "nvidia-master.yaml")
    r = import_directory(DATA)
    recipes = recipe_configs(r)
    return round_trip(map_workloads(points_frame(r), recipes), recipes)


def test_recipes_round_trip_or_are_listed_with_a_reason(trip: pd.DataFrame) -> None:
    counts = trip["status"].value_counts().to_dict()
    # 1,028 (recipe, phase) pairs: 992 agree on every compared field
    assert counts == {STATUS_AGREES: 992, STATUS_DIFFERS: 34, STATUS_NOT_MAPPED: 2}
    assert trip.loc[trip["status"] != STATUS_AGREES, "reason"].notna().all()


def test_what_differs_is_only_a_prefill_graph_config(trip: pd.DataFrame) -> None:
    # the recipes that set cuda_graph_config {enable_padding: false} on a prefill worker
    # (DSR1 FP8 B200/B300, serving_configs.md U4); every decode recipe agrees
    differs = trip[trip["status"] == STATUS_DIFFERS]
    assert set(differs[cc.PHASE]) == {"prefill"}
    assert differs["differences"].str.startswith("cuda_graph: ours False, recipe True").all()
    not_mapped = trip[trip["status"] == STATUS_NOT_MAPPED]
    assert set(not_mapped["reason"]) == {"recipe has no separate engine config for this phase"}


def test_every_decode_recipe_agrees(trip: pd.DataFrame) -> None:
    dec = trip[trip[cc.PHASE] == "decode"]
    assert (dec["status"] == STATUS_AGREES).sum() == len(dec) - 1  # the aggregated recipe
