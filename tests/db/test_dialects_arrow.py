"""db.dialects: a PostgreSQL COPY parsed block by block gives the frame of one block."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from db import dialects


def test_blocks_encoded_apart_give_the_categoricals_of_one_read() -> None:
    # two CSV blocks whose text columns were dictionary-encoded separately: different
    # dictionaries, a value only in the second block, a missing value in the first
    first = pa.record_batch(
        {"backend": ["TRTLLM", None, "CUTLASS"], "note": ["a", "b", "a"], "x": [1, 2, 3]}
    )
    second = pa.record_batch(
        {"backend": ["CUTEDSL", "TRTLLM", "TRTLLM"], "note": ["c", "a", "b"], "x": [4, 5, 6]}
    )
    whole = pa.Table.from_batches([first, second])
    enc = ["backend", "note"]
    table = pa.Table.from_batches([dialects._encode(b, enc) for b in (first, second)])
    assert pa.types.is_dictionary(table.schema.field("backend").type)

    got = dialects.arrow_to_frame(table, ["backend"])
    want = dialects.arrow_to_frame(whole, ["backend"])
    pd.testing.assert_frame_equal(got[["backend", "x"]], want[["backend", "x"]])
    assert got["backend"].cat.categories.tolist() == ["CUTEDSL", "CUTLASS", "TRTLLM"]
    assert got["backend"].isna().tolist() == [False, True, False, False, False, False]
    # a dictionary-encoded text column not asked for as categorical reads as before too
    assert dialects.arrow_to_frame(table, ["note"])["note"].astype(str).tolist() == [
        "a",
        "b",
        "a",
        "c",
        "a",
        "b",
    ]


def test_an_all_missing_encoded_text_column_is_object_none() -> None:
    batch = pa.record_batch({"backend": pa.array([None, None], pa.string())})
    table = pa.Table.from_batches([dialects._encode(batch, ["backend"])])
    got = dialects.arrow_to_frame(table, ["backend"])["backend"]
    assert got.isna().all() and len(got) == 2
