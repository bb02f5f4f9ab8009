"""Real-data tier: leave-one-model-out on NVIDIA's published sweeps (three models, two
GPUs, two quants; top 3 per workload only). Each model is held out in turn and answered
by the shape model fitted on the others; its pick is scored against the measured best
and compared with the guide's decision tree on the workloads where both picks were kept.
Printed with ``-s``; asserted: what the method has been measured to do here, so a
change that makes it worse fails."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis import columns as C
from analysis import predict_shape_validate as L
from ingest.detect import parse_path
from ingest.records import UploadMeta
from service.frames import prepare_frame
from tests.realdata import require, shared_data_dir

pytestmark = pytest.mark.realdata


def test_leave_one_model_out_on_nvidias_published_sweeps() -> None:
    path = require(shared_data_dir() / "nvidia_moe_dashboard" / "data.js")
    frames = []
    for run_id, sweep in enumerate(parse_path(Path(path), UploadMeta())):
        run = {k: sweep.run[k] for k in C.RUN_COLUMNS if k != C.RUN_ID}
        frames.append(sweep.candidates.assign(**run, **{C.RUN_ID: run_id}))
    frame = prepare_frame(pd.concat(frames, ignore_index=True))
    summary = L.summarize_models(L.validate_models(frame))
    print(f"\nNVIDIA published sweeps, leave one model out: {summary}")
    assert summary["n_workloads"] > 1000
    pred, paired = summary["predicted"], summary["paired"]
    # the pick mostly among the configurations the source kept (256 of 1,120 without the
    # tree as tie-break, 104 with it walked on the hand table; the tree's own: 70)
    assert pred["censored"] <= summary["tree"]["censored"]
    assert paired["n"] > 1000
    assert paired["predicted"]["median_regret_pct"] == 0.0
    # no worse than the tree (issue 24): at the worst case, in wrong picks, and at p90 to
    # 0.01 point (3.827 vs 3.826 %: the tree's pick wherever it is a contender)
    assert paired["predicted"]["worst_regret_pct"] <= paired["tree"]["worst_regret_pct"]
    assert paired["predicted"]["wrong_picks"] <= paired["tree"]["wrong_picks"]
    assert paired["predicted"]["p90_regret_pct"] <= paired["tree"]["p90_regret_pct"] + 0.01
    # over every workload it scores, the pick is not behind the tree at p90
    assert pred["p90_regret_pct"] <= summary["tree"]["p90_regret_pct"]
    assert summary["coverage"] >= 0.75
