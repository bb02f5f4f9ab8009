"""The parallel path for big bench_moe reports (ingest.parallel_parse): the same answer
as the sequential parser, global row indices in errors, a fallback when unsure, and no
process left behind."""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis import columns as C
from ingest.bench_moe import parse_bench_moe, parse_parallel
from ingest.errors import InputError, UnsupportedFormat
from ingest.parallel_parse import MAX_WORKERS, PARALLEL_MIN_BYTES, worker_count
from ingest.records import Sweep, UploadMeta
from tests.factories.hostile import minimal_report


def _big_report(rows: int) -> dict[str, Any]:
    doc = minimal_report()
    template = doc["results"]
    doc["results"] = []
    for i in range(rows):
        row = json.loads(json.dumps(template[i % 2]))
        row["workload"]["num_tokens"] = i + 1
        doc["results"].append(row)
    return doc


def _children() -> set[int]:
    """PIDs of this process's live child processes (from /proc, not from our own code)."""
    me = str(os.getpid())
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                pids.add(int(entry.name))
    return pids


def _assert_same(parallel: list[Sweep] | None, sequential: list[Sweep]) -> None:
    assert parallel is not None
    (sweep,), (reference,) = parallel, sequential
    pd.testing.assert_frame_equal(sweep.candidates, reference.candidates)
    assert sweep.run == reference.run


@pytest.mark.parametrize("indent", [None, 2])
def test_parallel_parse_equals_sequential(indent: int | None) -> None:
    doc = _big_report(301)
    doc["results"][250]["unknown_key"] = {"Infinity": "NaN"}
    doc["results"][7]["latency_ms"]["per_rank"] = {"rank0": {"max": float("inf")}}
    for i in (3, 291):  # per-value warnings must add up the same way in both paths
        doc["results"][i]["actual_config"]["comm_method"] = "NewComm"
        doc["results"][i + 2]["requested_config"]["parallel_mode"] = "QTP9"
    raw = json.dumps(doc, indent=indent).encode()
    meta = UploadMeta(hardware="H100")  # disagrees with the device: a run-level warning
    before = _children()
    parallel = parse_parallel(raw, meta, 3)
    assert _children() <= before  # every pool process has exited
    sequential = parse_bench_moe(raw, meta, workers=1)
    _assert_same(parallel, sequential)
    assert parallel is not None
    frame = parallel[0].candidates
    assert list(frame[C.CANDIDATE_INDEX]) == list(range(301))
    assert '"max":Infinity' in frame.loc[7, C.PER_RANK_JSON]
    assert "(2 times)" in parallel[0].run["warnings_json"]  # counts merged across children


def test_parallel_parse_from_threads_equals_sequential() -> None:
    """The API parses in a thread pool: two big uploads at once must not mix their rows."""
    docs = [_big_report(120), _big_report(90)]
    docs[1]["results"][40]["status"] = "skipped"
    raws = [json.dumps(doc).encode() for doc in docs]
    with ThreadPoolExecutor(2) as threads:
        parallel = list(threads.map(lambda raw: parse_parallel(raw, UploadMeta(), 2), raws))
    for got, raw in zip(parallel, raws, strict=True):
        _assert_same(got, parse_bench_moe(raw, UploadMeta(), workers=1))
    assert not multiprocessing.active_children()


def test_parallel_parse_reports_global_row_index() -> None:
    doc = _big_report(200)
    doc["results"][180]["latency_ms"]["score"] = "slow"
    with pytest.raises(InputError) as info:
        parse_parallel(json.dumps(doc).encode(), UploadMeta(), 2)
    assert info.value.field == "results[180].latency_ms.score"
    doc = _big_report(200)
    doc["results"][150]["latency_us"] = {"score": 1.0}
    with pytest.raises(UnsupportedFormat):
        parse_parallel(json.dumps(doc).encode(), UploadMeta(), 2)


def test_parallel_parse_falls_back_when_unsure(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = json.dumps(_big_report(200)).encode()
    # broken JSON inside the second half: the sequential parser gives the message
    broken = raw.replace(b'"num_tokens": 150,', b'"num_tokens": 150,,')
    assert parse_parallel(broken, UploadMeta(), 2) is None
    monkeypatch.setattr("ingest.parallel_parse.PARALLEL_MIN_BYTES", 0)
    with pytest.raises(InputError, match="invalid JSON"):
        parse_bench_moe(broken, UploadMeta())
    # a bad row in the first half and broken JSON in the second: the whole text is
    # checked first, as the sequential parser does, so the JSON message wins
    both = broken.replace(b'"num_tokens": 20,', b'"num_tokens": "20",')
    assert both != broken
    assert parse_parallel(both, UploadMeta(), 2) is None
    with pytest.raises(InputError, match="invalid JSON"):
        parse_bench_moe(both, UploadMeta())
    # results not followed by rankings / unusual key order: no split, same answer
    doc = _big_report(50)
    reordered = {"results": doc.pop("results"), **doc}
    raw2 = json.dumps(reordered).encode()
    assert parse_parallel(raw2, UploadMeta(), 2) is None
    (sweep,) = parse_bench_moe(raw2, UploadMeta())
    assert len(sweep.candidates) == 50
    # a "results" string that looks like the array start but is not
    tricky = json.dumps({"notes": '"results": [', **_big_report(40)}).encode()
    (sweep,) = parse_bench_moe(tricky, UploadMeta())
    assert len(sweep.candidates) == 40


def test_worker_count() -> None:
    assert worker_count(None, PARALLEL_MIN_BYTES - 1) == 1  # small: never worth a pool
    assert worker_count(1, PARALLEL_MIN_BYTES) == 1
    assert worker_count(3, PARALLEL_MIN_BYTES) == 3
    assert worker_count(0, PARALLEL_MIN_BYTES) == 1
    assert worker_count(None, PARALLEL_MIN_BYTES) == min(os.cpu_count() or 1, MAX_WORKERS)
