"""ingest.nvidia_dashboard on small hand-written files in the dashboard formats."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pandas as pd
import pytest

from analysis import columns as C
from ingest.detect import parse_path, parse_upload
from ingest.errors import InputError
from ingest.lenient_json import loads
from ingest.nvidia_dashboard import (
    CSV_COLUMNS,
    DEFAULT_TRTLLM_VERSION,
    dashboard_csv_identity,
    parse_dashboard_csv,
    parse_dashboard_datajs,
)
from ingest.records import UploadMeta
from tests.ingest.contract import check_sweep_contract

DASH = Path(__file__).resolve().parents[1] / "fixtures" / "dashboard"
CSV_PATH = DASH / "csv" / "tiny_moe" / "NVFP4" / "B300.csv"
HEADER = ",".join(CSV_COLUMNS)


def test_csv_identity() -> None:
    assert dashboard_csv_identity(CSV_PATH) == ("tiny_moe", "NVFP4", "B300")
    assert dashboard_csv_identity("csv/glm_5/W4A8_MXFP4_MXFP8/GB300.csv") == (
        "glm_5", "W4A8_MXFP4_MXFP8", "GB300",
    )  # fmt: skip
    for bad in ("B300.csv", "a/b/c.json", "x/<m>/NVFP4/B300.csv"):
        with pytest.raises(InputError) as info:
            dashboard_csv_identity(bad)
        assert info.value.field == "filename"


def test_csv_sweeps_per_world_size() -> None:
    sweeps = parse_path(CSV_PATH, UploadMeta())
    assert [s.key for s in sweeps] == [
        "tiny_moe/NVFP4/B300.csv#ws=4",
        "tiny_moe/NVFP4/B300.csv#ws=8",
    ]
    for sweep in sweeps:
        check_sweep_contract(sweep.run, sweep.candidates)
    ws4, ws8 = sweeps
    assert len(ws4.candidates) == 3 and len(ws8.candidates) == 2
    run = ws4.run
    assert run[C.SOURCE_FORMAT] == "nvidia_dashboard"
    assert (run[C.MODEL], run[C.QUANT], run[C.HARDWARE], run[C.WORLD_SIZE]) == (
        "tiny_moe",
        "NVFP4",
        "B300",
        4,
    )
    assert run[C.NUM_EXPERTS] is None  # shape unknown for a model not in the guide table
    assert any("shape unknown" in w for w in loads(run["warnings_json"]))
    assert run[C.TRTLLM_VERSION] == DEFAULT_TRTLLM_VERSION
    assert run[C.SYNTHETIC] is False
    frame = ws4.candidates
    assert list(frame[C.CANDIDATE_INDEX]) == [0, 1, 2]
    assert list(frame[C.SOURCE_RANK]) == [1, 2, 1]
    assert list(frame[C.COMM]) == ["NVLINK_ONE_SIDED", "ALLGATHER", "NONE"]
    assert list(frame[C.COMM_ACTUAL]) == ["NVLinkOneSided", "AllGatherReduceScatter", "NONE"]
    assert frame[C.COMM_REQUESTED].isna().all()
    assert list(frame[C.CUDA_GRAPH]) == [True, True, False]
    assert frame[C.LOW_PRECISION_COMBINE].all()
    assert list(frame[C.ATTENTION_DP]) == [True, True, False]
    assert list(frame[C.MOE_EP_SIZE]) == [4, 1, 2] and list(frame[C.MOE_TP_SIZE]) == [1, 4, 2]
    assert frame[C.FAILURE_CATEGORY].isna().all() and (frame[C.STATUS] == "success").all()
    assert frame[C.RAW_SCORE_MS].isna().all() and frame[C.PER_RANK_NUM_TOKENS].isna().all()
    assert frame.loc[0, C.SCORE_MS] == 0.05
    tep = ws8.candidates.iloc[1]
    assert (tep[C.MOE_EP_SIZE], tep[C.MOE_TP_SIZE]) == (8, 1)  # derived from TEP at ws 8
    assert ws8.candidates.iloc[0][C.NUM_CHUNKS] == 2
    assert ws8.run["dispatch"] is None and ws4.run["dispatch"] == "balanced"


def test_datajs_matches_csv() -> None:
    sweeps = parse_path(DASH / "data.js", UploadMeta(trtllm_version="v9"))
    keys = [s.key for s in sweeps]
    assert keys == [
        "tiny_moe/NVFP4/B300.csv#ws=4",
        "tiny_moe/NVFP4/B300.csv#ws=8",
        "glm_5/W4A8_MXFP4_MXFP8/GB300.csv#ws=16",
    ]
    from_csv = parse_path(CSV_PATH, UploadMeta(trtllm_version="v9"))
    for js, cs in zip(sweeps[:2], from_csv, strict=True):
        pd.testing.assert_frame_equal(js.candidates, cs.candidates)
    glm = sweeps[2]
    shape = [glm.run[k] for k in (C.NUM_EXPERTS, C.TOP_K, C.HIDDEN_SIZE, C.INTERMEDIATE_SIZE)]
    assert shape == [256, 8, 6144, 2048]
    assert glm.run[C.HARDWARE] == "GB300" and glm.run[C.TRTLLM_VERSION] == "v9"
    assert loads(glm.candidates.loc[0, C.EXTRA_JSON]) == {"new_col": "kept"}
    assert "labels" in loads(glm.run["extra_json"])


def test_datajs_as_plain_json_and_mock_flag() -> None:
    text = (DASH / "data.js").read_text()
    body = text[text.index("{") : text.rindex("}") + 1].replace('"mock":false', '"mock":true')
    sweeps = parse_upload(body.encode(), UploadMeta())
    assert len(sweeps) == 3 and all(s.run[C.SYNTHETIC] for s in sweeps)


def test_csv_upload_needs_a_path() -> None:
    raw = CSV_PATH.read_bytes()
    with pytest.raises(InputError) as info:
        parse_upload(raw, UploadMeta())
    assert info.value.field == "filename"
    sweeps = parse_upload(raw, UploadMeta(), filename="csv/tiny_moe/NVFP4/B300.csv")
    assert len(sweeps) == 2


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        ("world_size,num_tokens\n4,1\n", "dispatch", "missing column"),
        (HEADER + "\n", "rows", "no data rows"),
        (
            HEADER + "\nx,1,balanced,on,1,DEP,D,4,1,TRTLLM,NONE,0.1,,success\n",
            "rows[0].world_size",
            "integer",
        ),
        (
            HEADER + "\n4,1,balanced,on,1,DEP,D,4,1,TRTLLM,NONE,fast,,success\n",
            "rows[0].score_ms",
            "number",
        ),
        (
            HEADER + "\n4,1,balanced,maybe,1,DEP,D,4,1,TRTLLM,NONE,0.1,,success\n",
            "rows[0].cuda_graph",
            "on",
        ),
        (
            HEADER + "\n4,1,balanced,on,1,QEP,D,4,1,TRTLLM,NONE,0.1,,success\n",
            "rows[0].parallel_mode",
            "QEP",
        ),
        (
            HEADER + "\n4,1,balanced,on,1,DEP,D,4,1,TRTLLM,NONE,-0.1,,success\n",
            "rows[0].score_ms",
            "finite",
        ),
        (
            HEADER + "\n4,1,balanced,on,1,DEP,D,4,1,TRTLLM,NONE,0.1,,great\n",
            "rows[0].status",
            "success",
        ),
        (
            HEADER + "\n4,0,balanced,on,1,DEP,D,4,1,TRTLLM,NONE,0.1,,success\n",
            "rows[0].num_tokens",
            "≥ 1",
        ),
        (HEADER + "\n4,1,balanced,on,1,DEP,D,4,1\n", "rows[0]", "fields"),
        (
            HEADER + "\n4,1,bal\x00anced,on,1,DEP,D,4,1,TRTLLM,NONE,0.1,,success\n",
            "rows[0].dispatch",
            "control",
        ),
    ],
)
def test_bad_csv(body: str, field: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        parse_dashboard_csv(body.encode(), UploadMeta(), "m", "NVFP4", "B300")
    assert info.value.field == field
    assert fragment in info.value.problem


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"window.MOE_DATA = [];", "MOE_DATA"),
        (b'window.MOE_DATA = {"files": []};', "MOE_DATA.files"),
        (b'window.MOE_DATA = {"files": {"a/b/C.csv": {}}};', "MOE_DATA.files['a/b/C.csv']"),
        (b'window.MOE_DATA = {"files": {"a/b/C.csv": [1]}};', "MOE_DATA.files['a/b/C.csv'][0]"),
        (b'window.MOE_DATA = {"files": {"nope": []}};', "MOE_DATA.files['nope']"),
        (b'window.MOE_DATA = {"files": {}};', "MOE_DATA.files"),
        (b'window.MOE_DATA = {"files": {}, "index": [{"file": 1}]};', "MOE_DATA.index[0].file"),
        (b'// header\nwindow.MOE_DATA = {"files": ', ""),
    ],
)
def test_bad_datajs(body: bytes, field: str) -> None:
    with pytest.raises(InputError) as info:
        parse_dashboard_datajs(body, UploadMeta())
    assert info.value.field == field


@pytest.mark.parametrize("junk", [[], {}, "x", -1, 1.5, True, None, 2**80, "\x00"])
def test_any_row_value_is_accepted_or_refused_cleanly(junk: object) -> None:
    import json

    row = dict(zip(CSV_COLUMNS, [4, 8, "balanced", "on", 1, "DEP", "D", 4, 1, "TRTLLM",
                                 "NONE", 0.1, None, "success"], strict=True))  # fmt: skip
    for key in [*CSV_COLUMNS, "extra"]:
        bad = {**row, key: junk}
        payload = {"index": [], "files": {"m/p/B300.csv": [bad]}}
        with contextlib.suppress(InputError):
            parse_dashboard_datajs(json.dumps(payload).encode(), UploadMeta())
