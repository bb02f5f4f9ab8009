"""Real-data tier: NVIDIA's published MoE dashboard data (data.js + 12 CSVs).

Reads ``$MOEDASH_SHARED_DATA/nvidia_moe_dashboard`` (default ``<repo>/../shared/data``);
never copies it into the repository.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from analysis import columns as C
from ingest.detect import parse_path
from ingest.records import UploadMeta
from tests.ingest.contract import check_sweep_contract
from tests.realdata import require, shared_data_dir

pytestmark = pytest.mark.realdata

REPO = Path(__file__).resolve().parents[2]
DATA = shared_data_dir()
DASHBOARD = DATA / "nvidia_moe_dashboard"


@pytest.fixture(scope="module")
def datajs_sweeps() -> list:
    require(DASHBOARD)
    return parse_path(DASHBOARD / "data.js", UploadMeta())


@pytest.fixture(scope="module")
def csv_sweeps() -> list:
    require(DASHBOARD)
    paths = sorted((DASHBOARD / "csv").glob("*/*/*.csv"))
    assert len(paths) == 12
    return [sweep for path in paths for sweep in parse_path(path, UploadMeta())]


def _rows_per_file(sweeps: list) -> Counter[str]:
    counts: Counter[str] = Counter()
    for sweep in sweeps:
        counts[sweep.key.split("#", 1)[0]] += len(sweep.candidates)
    return counts


def test_totals_and_per_file_counts(datajs_sweeps: list, csv_sweeps: list) -> None:
    js, cs = _rows_per_file(datajs_sweeps), _rows_per_file(csv_sweeps)
    assert sum(js.values()) == 3360 and sum(cs.values()) == 3360
    assert len(js) == 12
    assert js == cs
    assert sorted(s.key for s in datajs_sweeps) == sorted(s.key for s in csv_sweeps)


def test_same_frames_from_both_spellings(datajs_sweeps: list, csv_sweeps: list) -> None:
    by_key = {s.key: s for s in csv_sweeps}
    for sweep in datajs_sweeps:
        other = by_key[sweep.key]
        pd.testing.assert_frame_equal(sweep.candidates, other.candidates)
        assert {k: v for k, v in sweep.run.items() if k != "extra_json"} == {
            k: v for k, v in other.run.items() if k != "extra_json"
        }


def test_contract_and_known_values(csv_sweeps: list) -> None:
    for sweep in csv_sweeps:
        check_sweep_contract(sweep.run, sweep.candidates)
        assert sweep.run[C.SOURCE_FORMAT] == "nvidia_dashboard"
        assert (sweep.candidates[C.STATUS] == "success").all()
        assert sweep.candidates[C.COMM].isin(C.COMM_CANONICAL).all()
        assert sweep.candidates[C.MOE_EP_SIZE].notna().all()
        ep_tp = sweep.candidates[C.MOE_EP_SIZE] * sweep.candidates[C.MOE_TP_SIZE]
        assert (ep_tp == sweep.run[C.WORLD_SIZE]).all(), sweep.key
    glm = next(s for s in csv_sweeps if s.key == "glm_5/NVFP4/GB300.csv#ws=4")
    first = glm.candidates.iloc[0]
    assert glm.run[C.WORLD_SIZE] == 4
    assert first[C.NUM_TOKENS] == 1
    assert first[C.BACKEND] == "MEGAMOE_CUTEDSL"
    assert first[C.COMM] == "NONE" and first[C.COMM_ACTUAL] == "NONE"
    assert first[C.SCORE_MS] == 0.0672523629936305
    assert first[C.SOURCE_RANK] == 1 and first[C.ATTN] == "D"
    assert glm.run[C.HARDWARE] == "GB300" and glm.run[C.QUANT] == "NVFP4"
    assert (glm.run[C.NUM_EXPERTS], glm.run[C.TOP_K], glm.run[C.HIDDEN_SIZE]) == (256, 8, 6144)
    kimi = next(s for s in csv_sweeps if s.key.startswith("kimi_k2/"))
    assert (kimi.run[C.NUM_EXPERTS], kimi.run[C.TOP_K]) == (384, 8)
    assert {s.run[C.WORLD_SIZE] for s in csv_sweeps} <= {4, 8, 16, 32}
    assert all(s.run[C.TRTLLM_VERSION] == "v1.3.0rc26" for s in csv_sweeps)
