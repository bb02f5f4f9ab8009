"""ingest.lenient_json: bare Infinity/NaN, strings untouched, round trips."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.errors import InputError
from ingest.lenient_json import dumps, load_document, loads


def test_bare_tokens() -> None:
    value = loads(b'{"a": Infinity, "b": -Infinity, "c": NaN, "d": [1, Infinity]}')
    assert value["a"] == math.inf and value["b"] == -math.inf and math.isnan(value["c"])
    assert value["d"] == [1, math.inf]


def test_tokens_inside_strings_stay_text() -> None:
    raw = b'{"s": "Infinity", "t": "x: Infinity, NaN", "u": "\\"NaN\\": -Infinity", "v": Infinity}'
    value = loads(raw)
    assert value == {
        "s": "Infinity",
        "t": "x: Infinity, NaN",
        "u": '"NaN": -Infinity',
        "v": math.inf,
    }


def test_strict_json_is_unchanged() -> None:
    raw = b'{"a": [1, 2.5, "x", null, true, false, {"b": -0.0}], "big": 18446744073709551616}'
    assert loads(raw) == json.loads(raw)


def test_utf8_bom_ignored_and_str_input() -> None:
    assert loads(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}
    assert loads('{"é": Infinity}') == {"é": math.inf}


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b'{"a": 1', "invalid JSON"),
        (b'{"a": infinity}', "invalid JSON"),
        (b'{"a": Infinityx}', "invalid JSON"),
        (b'{"a": -NaN}', "invalid JSON"),
        (b'{"a": "\xff"}', "not valid UTF-8"),
        (b"\xff\xfe{\x00}\x00", "UTF-16"),
        (b"[" * 10_000 + b"]" * 10_000, "invalid JSON"),
        (b'{"a": "\\ud800"}', "invalid JSON"),
    ],
)
def test_invalid(raw: bytes, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        loads(raw)
    assert fragment in info.value.problem and info.value.field == "" and info.value.status == 422


def test_nonfinite_location_tracking() -> None:
    clean = load_document(b'{"model": {"x": 1.0}, "results": [{"s": 1.0}]}')
    assert clean.nonfinite_keys == frozenset()
    assert not clean.may_have_nonfinite("results")
    in_model = load_document(b'{"model": {"x": Infinity}, "results": [{"s": 1.0}]}')
    assert in_model.nonfinite_keys == frozenset({"model"})
    assert not in_model.may_have_nonfinite("results") and in_model.may_have_nonfinite("model")
    in_results = load_document(b'{"model": {"x": Infinity}, "results": [{"s": NaN}]}')
    assert in_results.may_have_nonfinite("results")
    # the word inside a string makes the count ambiguous: assume anything
    in_string = load_document(b'{"model": {"x": "NaN"}, "results": [{"s": 1.0}]}')
    assert in_string.may_have_nonfinite("results")


def test_dumps_writes_bare_tokens_and_round_trips() -> None:
    value = {"limit": math.inf, "low": -math.inf, "s": "Infinity", "n": [1, 2.5, None]}
    text = dumps(value)
    assert text == '{"limit":Infinity,"low":-Infinity,"s":"Infinity","n":[1,2.5,null]}'
    assert loads(text) == value
    assert math.isnan(loads(dumps({"x": math.nan}))["x"])
    assert dumps({"a": 1.5}, nonfinite=False) == '{"a":1.5}'
    assert dumps({"big": 2**70}, nonfinite=False) == '{"big":1180591620717411303424}'


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_round_trip_property(value: Any) -> None:
    assert loads(dumps(value)) == value
    assert loads(json.dumps(value).encode()) == value
