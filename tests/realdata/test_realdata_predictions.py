"""Real-data tier: predictions validated on NVIDIA's published sweeps (top 3 per workload
only, a project-external source): every cell, each measured token count held out in turn
from the fit and the calibration. The numbers are printed (``-s``); asserted are the
properties the method promises there: intervals calibrated (coverage near 90 %) and the
predicted pick no worse than the nearest measured workload's winner at p90 and at worst,
and the worst case far from the 112 % of ranking attention DP against attention TP at the
same num_tokens (what the method did before families)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis import columns as C
from analysis import predict_validate as V
from ingest.detect import parse_path
from ingest.records import UploadMeta
from service.frames import prepare_frame
from tests.realdata import require, shared_data_dir

pytestmark = pytest.mark.realdata


def test_predictions_on_nvidias_published_sweeps() -> None:
    path = require(shared_data_dir() / "nvidia_moe_dashboard" / "data.js")
    frames = []
    for run_id, sweep in enumerate(parse_path(Path(path), UploadMeta())):
        run = {k: sweep.run[k] for k in C.RUN_COLUMNS if k != C.RUN_ID}
        frames.append(sweep.candidates.assign(**run, **{C.RUN_ID: run_id}))
    frame = prepare_frame(pd.concat(frames, ignore_index=True))
    tables = [
        V.validate(cell.reset_index(drop=True))
        for _, cell in frame.groupby([C.MODEL, C.HARDWARE, C.QUANT], observed=True)
    ]
    summary = V.summarize(pd.concat([t for t in tables if len(t)], ignore_index=True))
    print(f"\nNVIDIA published sweeps, held-out token counts: {summary}")
    assert summary["n_queries"] > 800
    assert 0.88 <= summary["coverage"] <= 0.97
    pred, near = summary["predicted"], summary["nearest"]
    assert pred["median_regret_pct"] == 0.0
    assert pred["p90_regret_pct"] <= near["p90_regret_pct"]
    assert pred["worst_regret_pct"] <= near["worst_regret_pct"]
    # issue 24's goal: <= 10 % (15.6 % before answers stopped interpolating across the
    # idle-rank regime of attention DP below the world size)
    assert pred["worst_regret_pct"] <= 10.0
    # a pick the top-3 source did not keep at the held-out count is not scored: few
    assert pred["censored"] <= 0.03 * summary["n_queries"]
