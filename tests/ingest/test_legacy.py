"""Older bench_moe formats (ingest.legacy): the pre-merge schema_version 2 is refused with
guidance, the early package version parses with nulls."""

from __future__ import annotations

import pytest

from analysis import columns as C
from ingest.detect import parse_path
from ingest.errors import UnsupportedFormat
from ingest.records import UploadMeta
from tests.factories import FIXTURES
from tests.ingest.contract import check_sweep_contract


def test_schema_v2_refused_with_guidance() -> None:
    with pytest.raises(UnsupportedFormat) as info:
        parse_path(FIXTURES / "bench_moe_schema_v2.json", UploadMeta())
    assert info.value.status == 422
    assert "schema_version 2" in info.value.problem and "µs" in info.value.problem


def test_early_package_version_parses_with_nulls() -> None:
    (sweep,) = parse_path(FIXTURES / "bench_moe_early_package.json", UploadMeta())
    frame = sweep.candidates
    assert sweep.run[C.SOURCE_FORMAT] == "bench_moe_legacy"
    assert frame.loc[0, C.SCORE_MS] == 0.1
    assert frame[C.RAW_SCORE_MS].isna().all() and frame[C.N_ITERS].isna().all()
    check_sweep_contract(sweep.run, frame)
