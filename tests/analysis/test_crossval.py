"""analysis.crossval: ledger, outcomes, summary on tiny synthetic frames."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.crossval import (
    E2EOutcome,
    classify_outcome,
    ledger,
    nearest_tokens,
    outcomes_frame,
    summary,
    validate_outcome,
)


def workload(wid: str = "w1", phase: str = "decode", **kw: Any) -> dict[str, Any]:
    """A mappable H200 DEP8 decode workload deployed as CUTLASS EP8, comm AUTO."""
    row: dict[str, Any] = dict.fromkeys(cc.WORKLOAD_COLUMNS)
    row.update(
        {
            cc.WORKLOAD_ID: wid,
            cc.POINT_ID: wid.split(":")[0],
            cc.PHASE: phase,
            c.MODEL: "deepseek_r1",
            c.QUANT: "FP8_BLOCK_SCALES",
            c.HARDWARE: "H200",
            c.WORLD_SIZE: 8,
            c.NUM_TOKENS: 192,
            c.CUDA_GRAPH: phase == "decode",
            c.ATTENTION_DP: True,
            c.BACKEND: "CUTLASS",
            c.MOE_EP_SIZE: 8,
            c.MOE_TP_SIZE: 1,
            c.COMM: "AUTO",
            cc.COMM_FORCED: False,
            cc.MAPPABLE: True,
        }  # fmt: skip
    )
    row.update(kw)
    return row


def cand(backend: str, score: float, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        c.MODEL: "deepseek_r1", c.QUANT: "FP8_BLOCK_SCALES", c.HARDWARE: "H200",
        c.WORLD_SIZE: 8, c.NUM_TOKENS: 192, c.CUDA_GRAPH: True, c.ATTENTION_DP: True,
        c.ATTN: "D", c.PARALLEL_MODE: "DEP", c.BACKEND: backend, c.MOE_EP_SIZE: 8,
        c.MOE_TP_SIZE: 1, c.COMM: "NVLINK_ONE_SIDED", c.STATUS: "success", c.SCORE_MS: score,
    }  # fmt: skip
    row.update(kw)
    return row


def run(workloads: list[dict[str, Any]], cands: list[dict[str, Any]]) -> pd.DataFrame:
    return ledger(pd.DataFrame(workloads), pd.DataFrame(cands))


# --------------------------------------------------------------------------- ledger
def test_match_and_flip_when_data_flips() -> None:
    cands = [cand("CUTLASS", 1.0), cand("TRTLLM", 1.2), cand("DEEPGEMM", 0.5, status="failed")]
    lg = run([workload()], cands)
    assert tuple(lg.columns) == cc.LEDGER_COLUMNS
    r = lg.iloc[0]
    assert (r[cc.STATUS], r[cc.N_CANDIDATES], r[cc.DEPLOYED_RANK]) == ("Match", 2, 1)
    assert pd.isna(r[cc.DIFFERS])  # failed DEEPGEMM (0.5 ms) is not a candidate

    flipped = [cand("CUTLASS", 1.0), cand("TRTLLM", 0.8)]
    r = run([workload()], flipped).iloc[0]
    assert r[cc.STATUS] == "Mismatch"
    assert r[cc.DIFFERS] == "backend: CUTLASS->TRTLLM"
    assert (r[cc.BEST_BACKEND], r[cc.BEST_SCORE_MS], r[cc.DEPLOYED_SCORE_MS]) == (
        "TRTLLM", 0.8, 1.0,
    )  # fmt: skip
    assert r[cc.DEPLOYED_RANK] == 2
    assert r[cc.DEPLOYED_GAP_PCT] == pytest.approx(25.0)


def test_layout_difference_is_a_mismatch() -> None:
    cands = [cand("CUTLASS", 1.0), cand("CUTLASS", 0.9, **{c.MOE_EP_SIZE: 4, c.MOE_TP_SIZE: 2})]
    r = run([workload()], cands).iloc[0]
    assert r[cc.STATUS] == "Mismatch"
    assert r[cc.DIFFERS] == "moe_ep_size: 8->4; moe_tp_size: 1->2"


def test_comm_compared_only_when_forced() -> None:
    cands = [cand("CUTEDSL", 1.0, **{c.COMM: "NVLINK_ONE_SIDED"}),
             cand("CUTEDSL", 1.1, **{c.COMM: "NVLINK_TWO_SIDED"})]  # fmt: skip
    auto = workload(**{c.BACKEND: "CUTEDSL"})
    assert run([auto], cands).iloc[0][cc.STATUS] == "Match"  # AUTO: backend+layout only
    forced = workload(**{c.BACKEND: "CUTEDSL", c.COMM: "NVLINK_TWO_SIDED", cc.COMM_FORCED: True})
    r = run([forced], cands).iloc[0]
    assert r[cc.STATUS] == "Mismatch"
    assert r[cc.DIFFERS] == "comm: NVLINK_TWO_SIDED->NVLINK_ONE_SIDED"
    assert r[cc.DEPLOYED_RANK] == 2


def test_attention_family_and_graph_are_part_of_the_key() -> None:
    # A faster TEP candidate must not beat a DEP deployment; nor a no-graph candidate.
    cands = [cand("CUTLASS", 1.0), cand("TRTLLM", 0.1, **{c.ATTENTION_DP: False}),
             cand("DEEPGEMM", 0.1, **{c.CUDA_GRAPH: False})]  # fmt: skip
    assert run([workload()], cands).iloc[0][cc.STATUS] == "Match"


def test_tie_goes_to_the_deployed_config_and_order_does_not_matter() -> None:
    cands = [cand("TRTLLM", 1.0), cand("CUTLASS", 1.0), cand("DEEPGEMM", 1.5)]
    a = run([workload()], cands)
    b = run([workload()], list(reversed(cands)))
    assert a.iloc[0][cc.STATUS] == "Match"
    pd.testing.assert_frame_equal(a, b)


def test_nearest_tokens_used_and_flagged() -> None:
    cands = [
        cand("CUTLASS", 1.0, **{c.NUM_TOKENS: 256}),
        cand("TRTLLM", 0.9, **{c.NUM_TOKENS: 128}),
    ]
    # 192 is exactly between 128 and 256 on a log axis? no: log2(192/128)=0.585,
    # log2(256/192)=0.415 -> 256 is nearer.
    r = run([workload()], cands).iloc[0]
    assert (r[cc.MEASURED_NUM_TOKENS], r[cc.NEAREST_TOKENS_USED], r[cc.STATUS]) == (
        256,
        True,
        "Match",
    )
    far = [cand("CUTLASS", 1.0, **{c.NUM_TOKENS: 512})]  # 512/192 = 2.67 > 2
    r = run([workload()], far).iloc[0]
    assert r[cc.STATUS] == "no data" and "none within x2" in r[cc.REASON]


def test_nearest_tokens_rules() -> None:
    assert nearest_tokens(64, [32, 64, 128]) == 64
    assert nearest_tokens(96, [64, 128]) == 128  # log-midpoint 90.5 < 96
    assert nearest_tokens(90, [64, 128]) == 64
    assert nearest_tokens(48, [24, 96]) == 96  # exact log tie -> larger (padding rounds up)
    assert nearest_tokens(100, [201]) is None
    assert nearest_tokens(100, [200]) == 200  # x2 is inside the tolerance
    assert nearest_tokens(100, [150], tolerance=1.25) is None


def test_no_data_and_not_mappable_reasons() -> None:
    cands = [cand("CUTLASS", 1.0)]
    rows = [
        workload("a", **{c.HARDWARE: "GB200"}),
        workload("b", **{c.WORLD_SIZE: 16}),
        workload("c", **{cc.MAPPABLE: False, cc.UNMAPPED_REASON: "model: unknown"}),
    ]
    lg = run(rows, cands)
    assert lg[cc.STATUS].tolist() == ["no data", "no data", "not mappable"]
    assert "hardware=GB200" in lg.iloc[0][cc.REASON]
    assert "world_size=16" in lg.iloc[1][cc.REASON]
    assert lg.iloc[2][cc.REASON] == "model: unknown"
    assert run(rows[:1], [])[cc.STATUS].tolist() == ["no data"]


def test_ledger_does_not_mutate_inputs() -> None:
    w = pd.DataFrame([workload()])
    cf = pd.DataFrame([cand("cutlass", 1.0, **{c.HARDWARE: "h200"})])
    w0, c0 = w.copy(), cf.copy()
    r = ledger(w, cf).iloc[0]
    assert r[cc.STATUS] == "Match"  # case-insensitive backend and hardware
    pd.testing.assert_frame_equal(w, w0)
    pd.testing.assert_frame_equal(cf, c0)


# --------------------------------------------------------------------------- outcomes
@pytest.mark.parametrize(
    ("candidate", "perfect", "label"),
    [
        (103.0, None, "Flat"),  # exactly +3 % is within the band
        (103.01, None, "Improvement"),
        (97.0, None, "Flat"),  # exactly -3 %
        (96.99, None, "Regression"),
        (96.0, 98.0, "Regression"),  # perfect routing recovers to -2 %
        (96.0, 97.0, "Regression"),  # perfect routing exactly -3 %: not below the band
        (96.0, 96.5, "Regression after perfect routing"),
        (110.0, 50.0, "Improvement"),  # perfect routing only matters for regressions
    ],
)
def test_classify_outcome_boundaries(candidate: float, perfect: float | None, label: str) -> None:
    # Paired: the deployed config re-run under perfect routing serves 100 too.
    assert classify_outcome(100.0, candidate, perfect, deployed_perfect_routing=100.0) == label


def test_regression_after_perfect_routing_compares_like_for_like() -> None:
    # Candidate 96 under real routing (-4 %), 96.5 under perfect routing. Against the
    # deployed config's own perfect-routing run the verdict depends on that run:
    assert classify_outcome(100.0, 96.0, 96.5, deployed_perfect_routing=100.0) == (
        "Regression after perfect routing"
    )  # -3.5 %: still a regression
    assert classify_outcome(100.0, 96.0, 96.5, deployed_perfect_routing=98.0) == "Regression"
    # -1.5 %: routing skew explains it. Without the deployed run: no like-for-like pair.
    assert classify_outcome(100.0, 96.0, 96.5) == "Regression"
    with pytest.raises(ValueError, match="tps_per_user_deployed_perfect_routing"):
        validate_outcome(
            {"workload_id": "w", "tps_per_user_deployed": 1, "tps_per_user_candidate": 1,
             "tps_per_user_deployed_perfect_routing": float("inf")}
        )  # fmt: skip


def test_classify_band_parameter_and_float_noise() -> None:
    assert classify_outcome(100.0, 104.0, band_pct=5.0) == "Flat"
    assert classify_outcome(100.0, 104.0) == "Improvement"
    # 1.03 * 37.1 is not exactly +3 % in binary floating point; still Flat.
    assert classify_outcome(37.1, 37.1 * 1.03) == "Flat"


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"tps_per_user_deployed": 1, "tps_per_user_candidate": 1}, "workload_id"),
        ({"workload_id": "", "tps_per_user_deployed": 1, "tps_per_user_candidate": 1},
         "workload_id"),
        ({"workload_id": "w", "tps_per_user_candidate": 1}, "tps_per_user_deployed"),
        ({"workload_id": "w", "tps_per_user_deployed": "9", "tps_per_user_candidate": 1},
         "tps_per_user_deployed"),
        ({"workload_id": "w", "tps_per_user_deployed": 1, "tps_per_user_candidate": 0},
         "tps_per_user_candidate"),
        ({"workload_id": "w", "tps_per_user_deployed": 1, "tps_per_user_candidate": True},
         "tps_per_user_candidate"),
        ({"workload_id": "w", "tps_per_user_deployed": 1, "tps_per_user_candidate": 1,
          "tps_per_user_candidate_perfect_routing": float("nan")},
         "tps_per_user_candidate_perfect_routing"),
        ({"workload_id": "w", "tps_per_user_deployed": 1, "tps_per_user_candidate": 1, "x": 1},
         "x"),
    ],
)  # fmt: skip
def test_validate_outcome_names_the_field(record: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        validate_outcome(record)


def test_validate_and_frame() -> None:
    o = validate_outcome(
        {"workload_id": "w", "tps_per_user_deployed": 50, "tps_per_user_candidate": 55.0}
    )
    assert o == E2EOutcome("w", 50.0, 55.0, None)
    df = outcomes_frame([o])
    assert tuple(df.columns) == cc.OUTCOME_COLUMNS
    assert df.iloc[0][cc.CHANGE_PCT] == pytest.approx(10.0)
    assert df.iloc[0][cc.OUTCOME] == "Improvement"
    with pytest.raises(ValueError, match="workload_id: duplicate"):
        outcomes_frame([o, o])


# --------------------------------------------------------------------------- summary
def test_summary_in_the_guide_format() -> None:
    # 2 prefill (both Match) + 4 decode (1 Match, 3 Mismatch) on H200, and one GB200
    # decode Mismatch; plus a no-data row and a not-mappable row that only show up in
    # the counts.
    good = [cand("CUTLASS", 1.0), cand("TRTLLM", 2.0)]
    bad = [cand("CUTLASS", 2.0), cand("TRTLLM", 1.0)]
    pre = [{**x, c.CUDA_GRAPH: False, c.NUM_TOKENS: 16384} for x in good]
    gb = [{**x, c.HARDWARE: "GB200"} for x in bad]
    frames = []
    for wid, ph, cs in [
        ("p1:prefill", "prefill", pre), ("p2:prefill", "prefill", pre),
        ("d1:decode", "decode", good), ("d2:decode", "decode", bad),
        ("d3:decode", "decode", bad), ("d4:decode", "decode", bad),
    ]:  # fmt: skip
        kw = {c.NUM_TOKENS: 16384} if ph == "prefill" else {}
        frames.append(ledger(pd.DataFrame([workload(wid, ph, **kw)]), pd.DataFrame(cs)))
    frames.append(ledger(pd.DataFrame([workload("g1:decode", **{c.HARDWARE: "GB200"})]),
                         pd.DataFrame(gb)))  # fmt: skip
    frames.append(ledger(pd.DataFrame([workload("n1:decode", **{c.WORLD_SIZE: 4})]),
                         pd.DataFrame(good)))  # fmt: skip
    lg = pd.concat(frames, ignore_index=True)
    outcomes = [
        {"workload_id": "d2:decode", "tps_per_user_deployed": 100, "tps_per_user_candidate": 110},
        {
            "workload_id": "d3:decode",
            "tps_per_user_deployed": 100,
            "tps_per_user_candidate": 90,
            "tps_per_user_candidate_perfect_routing": 95,
            "tps_per_user_deployed_perfect_routing": 100,
        },
        {"workload_id": "d1:decode", "tps_per_user_deployed": 100, "tps_per_user_candidate": 50},
    ]  # fmt: skip  (d1 is a Match: its outcome is ignored; d4 is not evaluated)
    s = summary(lg, outcomes)
    assert tuple(s.columns) == cc.SUMMARY_COLUMNS
    assert s[cc.S_HARDWARE].tolist() == ["GB200", "H200"]
    h = s[s[cc.S_HARDWARE] == "H200"].iloc[0]
    assert h[cc.S_MODEL] == "DeepSeek-R1"
    # Match 3/6: prefill 2/2, decode 1/4
    assert h[cc.S_MATCH] == "3/6 (50%, prefill 2/2, decode 1/4)"
    assert h[cc.S_MISMATCH] == "3/6"
    assert (h[cc.S_IMPROVEMENT], h[cc.S_FLAT], h[cc.S_REGRESSION]) == ("1/3", "0/3", "1/3")
    # d3: -10 %, and perfect routing only recovers to -5 % (< -3 %): counted in both.
    assert h[cc.S_REGRESSION_AFTER_PR] == "1/3"
    assert (h[cc.N_NOT_EVALUATED], h[cc.N_NO_DATA]) == (1, 1)
    g = s[s[cc.S_HARDWARE] == "GB200"].iloc[0]
    assert g[cc.S_MATCH] == "0/1 (0%, prefill 0/0, decode 0/1)"
    assert g[cc.S_IMPROVEMENT] == "0/1" and g[cc.N_NOT_EVALUATED] == 1


def test_candidates_missing_columns_raise() -> None:
    with pytest.raises(ValueError, match="candidates: missing columns"):
        ledger(pd.DataFrame([workload()]), pd.DataFrame([{c.MODEL: "deepseek_r1"}]))
