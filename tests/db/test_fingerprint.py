"""The fast candidate hashing (db.fingerprint) gives the bytes of its defining pandas
computation for every parser's frames and for awkward dtypes, and a stored run_key
keeps its value."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from db.dialects import plain_scalar
from db.fingerprint import candidate_hashes, reference_hash
from db.sweep_identity import _IDENTITY_RUN_KEYS, sweep_fingerprint
from ingest.demo.jsontext import dump_report
from ingest.demo.report import generate_report
from ingest.detect import parse_path, parse_upload
from ingest.records import Sweep, UploadMeta
from tests.factories import EXAMPLE, FIXTURES
from tests.factories.sweeps import make_candidates, make_sweep

META = UploadMeta(trtllm_version="v1.3.0rc26")


def reference_fingerprint(sweep: Sweep) -> str:
    """sweep_fingerprint as first written: every column through pandas."""
    digest = hashlib.sha256()
    facts = {k: plain_scalar(sweep.run.get(k)) for k in _IDENTITY_RUN_KEYS}
    digest.update(json.dumps(facts, sort_keys=True, default=str).encode())
    for name in C.CANDIDATE_COLUMNS:
        digest.update(name.encode())
        digest.update(reference_hash(name, sweep.candidates[name]).tobytes())
    return digest.hexdigest()


def assert_same_hashes(frame: pd.DataFrame) -> None:
    fast = candidate_hashes(frame)
    assert [name for name, _ in fast] == list(C.CANDIDATE_COLUMNS)
    for name, hashed in fast:
        assert hashed == reference_hash(name, frame[name]).tobytes(), name


def parsed_sweeps() -> list[Sweep]:
    report = generate_report("kimi_k2", "GB300", "NVFP4", 8, [64, 1024], seed=7)
    return [
        *parse_upload(dump_report(report), META),
        *parse_upload(EXAMPLE.read_bytes(), META),
        *parse_path(FIXTURES / "dashboard" / "data.js", META),
        *parse_upload((FIXTURES / "bench_moe_early_package.json").read_bytes(), META),
    ]


@pytest.mark.parametrize("index", range(4))
def test_parsed_frames_hash_like_pandas(index: int) -> None:
    sweeps = parsed_sweeps()
    sweep = sweeps[min(index, len(sweeps) - 1)]
    assert len(sweep.candidates) > 0
    assert_same_hashes(sweep.candidates)
    assert sweep_fingerprint(sweep) == reference_fingerprint(sweep)


def test_every_dashboard_sweep_keeps_its_fingerprint() -> None:
    sweeps = parse_path(FIXTURES / "dashboard" / "data.js", META)
    assert len(sweeps) > 1
    assert [sweep_fingerprint(s) for s in sweeps] == [reference_fingerprint(s) for s in sweeps]


def test_factory_frames_with_object_columns_hash_like_pandas() -> None:
    # numpy ints and bools, object text with None, all-None object columns
    assert_same_hashes(make_candidates(30, seed=3))


def awkward_frame() -> pd.DataFrame:
    n = 5
    frame = make_candidates(n, seed=1)
    frame[C.SCORE_MS] = np.array([0.0, -0.0, np.nan, 1.5, -np.inf])
    frame[C.NUM_TOKENS] = pd.array([1, None, 3, 4, 2**40], dtype="Int64")
    frame[C.MOE_EP_SIZE] = pd.array([1.0, None, 4.0, 4.5, 0.0], dtype="Float64")
    # an object column of numbers (and a numeric string): pandas' to_numeric decides
    frame[C.MOE_TP_SIZE] = pd.Series([1, "2", None, 4.0, "x"], dtype=object)
    frame[C.CUDA_GRAPH] = pd.array([True, None, False, True, None], dtype="boolean")
    frame[C.ATTENTION_DP] = pd.Series([True, None, False, True, None], dtype=object)
    frame[C.BACKEND] = pd.Series(["TRTLLM", None, "ünï", np.nan, ""], dtype=object)
    frame[C.COMM] = pd.Series(["a", None, "a", "b", None], dtype="str")
    frame[C.STATUS] = pd.Series(["success", 3, None, "failed", 2.5], dtype=object)
    frame[C.PARALLEL_MODE] = pd.Categorical(["DEP", "TEP", None, "DEP", "DEP"])
    return frame


def test_awkward_dtypes_hash_like_pandas() -> None:
    assert_same_hashes(awkward_frame())


def test_missing_values_do_not_hash_like_values() -> None:
    frame = awkward_frame()
    hashes = dict(candidate_hashes(frame))
    score = np.frombuffer(hashes[C.SCORE_MS], dtype=np.uint64)
    assert score[0] == score[1]  # 0.0 and -0.0 are one value
    assert len(set(score.tolist())) == 4
    backend = np.frombuffer(hashes[C.BACKEND], dtype=np.uint64)
    assert backend[1] == backend[3] != backend[4]  # None and NaN are missing, "" is not


def test_empty_frame_hashes_like_pandas() -> None:
    assert_same_hashes(make_candidates(0))


def test_int_and_float_of_one_value_hash_alike() -> None:
    a = make_candidates(6, seed=2)
    b = a.copy()
    b[C.MOE_EP_SIZE] = b[C.MOE_EP_SIZE].astype(np.float64)
    assert dict(candidate_hashes(a))[C.MOE_EP_SIZE] == dict(candidate_hashes(b))[C.MOE_EP_SIZE]
    changed = a.copy()
    changed.loc[0, C.MOE_EP_SIZE] = 8
    assert sweep_fingerprint(Sweep("", make_sweep().run, a)) != sweep_fingerprint(
        Sweep("", make_sweep().run, changed)
    )


def test_stored_run_key_value_is_pinned() -> None:
    # Stored databases hold run_key values computed this way: a new upload of the same
    # measurements must find them, so the value of a known sweep may never change.
    assert (
        sweep_fingerprint(make_sweep(20, seed=0))
        == "0c635424c569b690895ae97ec670dd35881c490cd1144674284d528e1ba0eaec"
    )


def test_a_big_frame_hashes_like_pandas() -> None:
    # beyond 10k rows text columns take pandas' dictionary path (memory), numbers not
    frame = make_candidates(10_050, seed=8)
    frame[C.COMM] = frame[C.COMM].astype("str")
    assert_same_hashes(frame)
