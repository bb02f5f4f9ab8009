"""Capabilities read from NVIDIA's published sweeps (real-data tier): B300 has MNNVL per
the data (NVLINK_ONE_SIDED ran at world size 4 and 8), which the hand table denies; the
conflict is listed and the tree's agreement uses the data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis import columns as C
from analysis.agreement import agreement_report
from analysis.capabilities import (
    capability_conflicts,
    measured_capabilities,
    measured_mnnvl,
    mnnvl_evidence,
)
from analysis.derived import add_derived
from ingest.detect import parse_path
from ingest.records import UploadMeta
from tests.realdata import require, shared_data_dir

pytestmark = pytest.mark.realdata

DATA = shared_data_dir()


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    path = require(DATA / "nvidia_moe_dashboard" / "data.js")
    frames = []
    for run_id, sweep in enumerate(parse_path(Path(path), UploadMeta())):
        run = {k: sweep.run[k] for k in C.RUN_COLUMNS if k != C.RUN_ID}
        frames.append(sweep.candidates.assign(**run, **{C.RUN_ID: run_id}))
    return add_derived(pd.concat(frames, ignore_index=True))


def test_b300_mnnvl_is_read_from_the_data(frame: pd.DataFrame) -> None:
    caps = measured_capabilities(frame)
    assert mnnvl_evidence(caps, "B300") == {
        "NVLINK_ONE_SIDED": [4, 8],
        "NVLINK_TWO_SIDED": [4, 8],
    }
    assert measured_mnnvl(caps) == {"B300": 8, "GB300": 32}
    conflicts = capability_conflicts(caps)
    b300 = conflicts[(conflicts["hardware"] == "B300") & (conflicts["subject"] == "mnnvl")]
    assert len(b300) == 1 and b300.iloc[0]["used"] == "data"


def test_b300_agreement_with_the_data_s_mnnvl(frame: pd.DataFrame) -> None:
    def pct(mnnvl: dict[str, int] | None) -> tuple[int, int, int]:
        _, s = agreement_report(frame, mnnvl=mnnvl, group_cols=(C.HARDWARE,))
        row = s[s[C.HARDWARE] == "B300"].iloc[0]
        return int(row["n_agree"]), int(row["n_pick_measured"]), int(row["n_workloads"])

    # agreement of measured picks: 407/495 (82.2 %) with the hand table's "no MNNVL" on
    # B300, 439/520 (84.4 %) with the data's MNNVL (up to world size 8); 560 workloads
    assert pct({}) == (407, 495, 560)
    assert pct(None) == (439, 520, 560)
