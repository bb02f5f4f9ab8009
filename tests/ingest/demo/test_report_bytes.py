"""Demo reports are deterministic and written in the exact bytes Python's json module
would write (the lenient dialect included)."""

from __future__ import annotations

import json
import math
import random
import struct

from ingest.demo import generate as demo
from tests.ingest.demo.reference import (
    TOP_KEYS,
)


def test_same_seed_same_bytes():
    a = demo.generate_report("kimi_k2", "B300", "NVFP4", 16, [1, 64, 4096], seed=11)
    b = demo.generate_report("kimi_k2", "B300", "NVFP4", 16, [1, 64, 4096], seed=11)
    c = demo.generate_report("kimi_k2", "B300", "NVFP4", 16, [1, 64, 4096], seed=12)
    assert demo.dump_report(a) == demo.dump_report(b)
    assert demo.dump_report(a) != demo.dump_report(c)


def test_demo_reports_deterministic(demo_set):
    again = demo.demo_reports()
    assert len(again) == len(demo_set)
    for (r1, m1), (r2, m2) in zip(demo_set[:4], again[:4], strict=True):
        assert m1 == m2
        assert demo.dump_report(r1) == demo.dump_report(r2)


def test_candidate_noise_independent_of_report_contents():
    a = demo.generate_report("glm_5", "GB300", "NVFP4", 8, [64, 512], seed=7)
    b = demo.generate_report("glm_5", "GB300", "NVFP4", 8, [512], seed=7, parallel_modes=["DEP"])
    pick = [
        r
        for r in a["results"]
        if r["workload"]["num_tokens"] == 512 and r["requested_config"]["parallel_mode"] == "DEP"
    ]
    assert [r["raw_data"] for r in pick] == [r["raw_data"] for r in b["results"]]


def test_dump_matches_json_module(small):
    out = demo.dump_report(small)
    assert out == json.dumps(small, indent=2, allow_nan=True).encode()
    assert demo.dump_report(small, compact=True) == json.dumps(small, allow_nan=True).encode()
    assert b'"swiglu_limit": Infinity' in out
    back = json.loads(out)
    assert back["model"]["swiglu_limit"] == math.inf
    assert list(back) == TOP_KEYS


def test_dump_float_and_string_edge_cases():
    rng = random.Random(1)
    floats = [
        1e-5,
        1.5e-7,
        -2.5e-9,
        9.999e-05,
        0.0001,
        1e16,
        1e22,
        5e-324,
        0.0,
        -0.0,
        1.0,
        123456789012345.6,
        1e-10,
        3.0e-100,
        0.1,
        2.0**-20,
    ]
    for _ in range(3000):
        v = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if math.isfinite(v):
            floats.append(v)
    floats += [10 ** rng.uniform(-9, 3) for _ in range(3000)]
    rows = [{"v": f, "arr": [f, -f], "s": 'e-5 0.00001 "x": 1e-05'} for f in floats]
    rows.append(
        {
            "ctl": "".join(chr(i) for i in range(32)) + '\\/"',
            "big": 2**63 + 5,
            "neg": -(2**63),
            "t": True,
            "n": None,
            "e": {},
            "l": [],
        }
    )
    doc = {"benchmark": "bench_moe", "results": rows, "model": {"swiglu_limit": math.inf}}
    assert demo.dump_report(doc) == json.dumps(doc, indent=2, allow_nan=True).encode()
    # shapes orjson cannot reproduce go through json: non-finite floats, non-ASCII, tuples,
    # non-str keys, huge ints
    for odd in (math.nan, -math.inf, "caf\u00e9", "\x7f", (1, 2), {1: "a"}, 2**70):
        doc2 = {"results": [{"x": 1.5}] * 60 + [{"odd": odd}]}
        assert demo.dump_report(doc2) == json.dumps(doc2, indent=2, allow_nan=True).encode()
