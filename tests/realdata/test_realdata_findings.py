"""Real-data tier: the analysis run on NVIDIA's published sweeps (and, for the ledger,
the published serving configs). These tests pin properties of the method on real data
(every derived number lies in its own bracket and in the measured range, counts add up),
not target values: the findings themselves are reported, not asserted."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis.agreement import agreement_report
from analysis.crossval import ledger, summary
from analysis.derived import add_derived
from analysis.serving_map import map_workloads
from analysis.thresholds import VERDICTS, derive_guide_thresholds, thresholds_from_check
from analysis.tree import Thresholds
from ingest.detect import parse_path
from ingest.records import UploadMeta
from ingest.serving_configs import import_directory, points_frame, recipe_configs
from tests.realdata import shared_data_dir

pytestmark = pytest.mark.realdata

DATA = shared_data_dir()


@pytest.fixture(scope="module")
def nvidia_frame() -> pd.DataFrame:
    path = DATA / "nvidia_moe_dashboard" / "data.js"
    if not path.is_file():
        pytest.fail(f"real data not found at {path} (set MOEDASH_SHARED_DATA)")
    frames = []
    for run_id, sweep in enumerate(parse_path(Path(path), UploadMeta())):
        run = {k: sweep.run[k] for k in C.RUN_COLUMNS if k != C.RUN_ID}
        frames.append(sweep.candidates.assign(**run, **{C.RUN_ID: run_id}))
    return add_derived(pd.concat(frames, ignore_index=True))


def test_guide_thresholds_rederived(nvidia_frame: pd.DataFrame) -> None:
    check = derive_guide_thresholds(nvidia_frame)
    table = check.table
    assert len(table) == 5
    assert set(table["verdict"]) <= set(VERDICTS)
    for row in table.to_dict("records"):
        if row["status"] == "crossover":
            assert row["bracket_lo"] <= row["derived"] <= row["bracket_hi"]
            assert row["axis_min"] <= row["bracket_lo"] <= row["bracket_hi"] <= row["axis_max"]
            assert row["n_workloads"] > 0 and row["n_models"] >= 1
        else:
            assert math.isnan(row["derived"])
    # The decode MEGAMOE-vs-TRTLLM switch is present in NVIDIA's own sweeps.
    decode = table.set_index("name").loc["decode_megamoe_tokens_per_rank"]
    assert decode["status"] == "crossover"
    assert not check.evidence.empty
    derived = thresholds_from_check(check)
    assert isinstance(derived, Thresholds)


def test_tree_agreement_on_published_sweeps(nvidia_frame: pd.DataFrame) -> None:
    detail, summary_df = agreement_report(nvidia_frame)
    assert len(summary_df) == 12  # 3 models x 2 GPUs x 2 phases
    assert summary_df["n_workloads"].sum() == len(detail)
    assert (summary_df["n_agree"] <= summary_df["n_workloads"]).all()
    pct = summary_df["agreement_pct"].dropna()  # N/A where no pick was measured
    assert ((pct >= 0) & (pct <= 100)).all()
    regret = detail["regret"].dropna()
    assert (regret >= -1e-12).all()  # the measured best is never beaten by the tree's pick
    measured = summary_df[summary_df["n_pick_measured"] > 0]
    assert np.isclose(
        measured["agreement_pct"], 100 * measured["n_agree"] / measured["n_pick_measured"]
    ).all()


def test_crossval_ledger_on_published_configs(nvidia_frame: pd.DataFrame) -> None:
    result = import_directory(DATA)
    workloads = map_workloads(points_frame(result), recipe_configs(result))
    led = ledger(workloads, nvidia_frame)
    assert len(led) == len(workloads)
    counts = led["crossval_status"].value_counts()
    assert set(counts.index) <= {"Match", "Mismatch", "no data", "not mappable"}
    compared = led[led["crossval_status"].isin(["Match", "Mismatch"])]
    # NVIDIA's sweeps cover GB300 DeepSeek-V4-Pro / GLM-5 / Kimi-K2 serving points.
    assert not compared.empty
    assert set(compared["hardware"]) <= {"GB300", "B300"}
    assert (compared["differs"].isna() == (compared["crossval_status"] == "Match")).all()
    table = summary(led, [])
    assert int(table["n_match"].sum()) == int((led["crossval_status"] == "Match").sum())
    assert int(table["n_mismatch"].sum()) == int((led["crossval_status"] == "Mismatch").sum())
