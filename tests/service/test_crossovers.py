"""``service.crossovers`` on a real store (DuckDB; PostgreSQL with the postgres marker):
validation with the stored values, the cached index, run-level filters, choices.

Known stores (built here, imported by the API, page, parity and browser tests):

* ``gemm_sweep``: the issue's case -- a single-GPU sweep (model toy_moe, H200, FP8,
  world size 1, decode, DP) of three GEMM backends the guide does not know. Rank 1:
  GEMM_ALPHA at 1-2 tokens, GEMM_BETA at 4-16 (a window), GEMM_GAMMA at 32-64: switches
  ALPHA->BETA (bracket 2-4, margins 25 % / 6.67 %) and BETA->GAMMA (16-32, 8.57 % /
  25 %), both robust (iteration stdev 0.5 %: band 0.707 %).
* ``repeat_sweeps``: three runs of one deepseek_v4_pro GB300 NVFP4 world-size-8 sweep,
  TRTLLM vs MEGAMOE_CUTEDSL at 64-512 tokens. The runs flip at 256 tokens (run 1:
  MEGAMOE 0.95 vs TRTLLM 1.00; run 2: 1.02 vs 0.97; run 3: 0.96 vs 1.03), so the medians
  switch at 128-256 but the high margin (4.17 %) is inside the run-to-run band (4.96 %):
  a tie within noise; run 1 alone is robust; run 2 alone switches at 256-512.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from analysis import columns as C
from analysis import noise as N
from analysis.identity import configuration_frame
from analysis.noise import estimate_noise
from db.store import Store
from ingest.records import Sweep, UploadMeta
from service.crossover_slice import CrossoverQuery, resolve
from service.crossovers import crossover_answer, slice_choices, slice_name
from service.errors import InvalidQuery
from service.frames import Cell, DashData
from tests.factories import make_candidates
from tests.factories.sweeps import make_run

TOKENS = (1, 2, 4, 8, 16, 32, 64)
GEMM: dict[str, tuple[float, ...]] = {
    "GEMM_ALPHA": (1.0, 1.2, 1.6, 2.4, 4.0, 7.0, 13.0),
    "GEMM_BETA": (1.3, 1.5, 1.5, 2.0, 3.5, 7.5, 15.0),
    "GEMM_GAMMA": (1.6, 1.8, 2.0, 2.6, 3.8, 6.0, 10.0),
}
GEMM_SLICE = {"model": "toy_moe", "hardware": "H200", "quant": "FP8"}
REPEAT_SLICE = {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"}
REPEATS: dict[str, tuple[tuple[float, float, float], ...]] = {
    "TRTLLM": ((0.5, 0.5, 0.5), (0.7, 0.7, 0.7), (1.0, 0.97, 1.03), (1.6, 1.6, 1.6)),
    "MEGAMOE_CUTEDSL": ((0.7, 0.7, 0.7), (0.8, 0.8, 0.8), (0.95, 1.02, 0.96), (1.2, 1.2, 1.2)),
}
REPEAT_TOKENS = (64, 128, 256, 512)


def _sweep(rows: Sequence[Mapping[str, Any]], **run: Any) -> Sweep:
    frame = make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)])
    return Sweep(key="", run=make_run(**run), candidates=frame[list(C.CANDIDATE_COLUMNS)])


def gemm_sweep() -> Sweep:
    rows = [
        {C.BACKEND: name, C.NUM_TOKENS: x, C.SCORE_MS: s, C.COMM: "NONE"}
        for name, scores in GEMM.items()
        for x, s in zip(TOKENS, scores, strict=True)
    ]
    shape = {C.NUM_EXPERTS: 64, C.TOP_K: 2, C.HIDDEN_SIZE: 2048, C.INTERMEDIATE_SIZE: 1024}
    return _sweep(rows, model="toy_moe", hardware="H200", quant="FP8", world_size=1, **shape)


def repeat_sweeps() -> list[Sweep]:
    out = []
    for run in range(3):
        rows = [
            {
                C.BACKEND: name,
                C.COMM: "NONE" if name == "MEGAMOE_CUTEDSL" else "NVLINK_ONE_SIDED",
                C.NUM_TOKENS: x,
                C.SCORE_MS: scores[j][run],
            }
            for name, scores in REPEATS.items()
            for j, x in enumerate(REPEAT_TOKENS)
        ]
        out.append(_sweep(rows, world_size=8, run_date=f"2026-10-0{run + 1}"))
    return out


def seed_crossovers(store: Store) -> dict[str, list[int]]:
    """Store the GEMM sweep and the three repeat runs; returns their run ids."""
    gemm = store.ingest([gemm_sweep()], b"xo-gemm", UploadMeta(hardware="H200"))
    ids = {"gemm": [r.run_id for r in gemm.runs], "repeats": []}
    for i, sweep in enumerate(repeat_sweeps()):
        res = store.ingest([sweep], f"xo-repeat-{i}".encode(), UploadMeta(hardware="GB300"))
        ids["repeats"] += [r.run_id for r in res.runs]
    return ids


@pytest.fixture
def seeded(store: Store) -> tuple[DashData, dict[str, list[int]]]:
    ids = seed_crossovers(store)
    return DashData(store, version_ttl=0.0), ids


def ask(data: DashData, **params: Any) -> Any:
    return crossover_answer(data, CrossoverQuery(**params))


def test_three_unknown_backends_on_one_gpu(seeded: tuple[DashData, Any]) -> None:
    data, ids = seeded
    ans = ask(data, **GEMM_SLICE)
    sw = ans.result.switches
    assert sw[["before", "after", "bracket_lo", "bracket_hi"]].values.tolist() == [
        ["GEMM_ALPHA", "GEMM_BETA", 2.0, 4.0],
        ["GEMM_BETA", "GEMM_GAMMA", 16.0, 32.0],
    ]
    assert sw["margin_lo_pct"].tolist() == pytest.approx([25.0, 100 * 0.3 / 3.5])
    assert sw["margin_hi_pct"].tolist() == pytest.approx([100 * 0.1 / 1.5, 25.0])
    assert sw["verdict"].tolist() == ["robust", "robust"]
    assert ans.provenance["run_ids"] == ids["gemm"] and ans.provenance["n_candidates"] == 21
    assert ans.name == "crossovers_backend_num_tokens_toy_moe_H200_FP8"
    # the same switches along tokens per rank: DEP on 1 GPU, top_k 2
    tpr = ask(data, **GEMM_SLICE, axis="activated_tokens_per_rank")
    assert tpr.result.switches["bracket_lo"].tolist() == [4.0, 32.0]
    # and asked without the cell (the bounded frame of the model's runs): the same rows
    pooled = ask(data, model="toy_moe")
    cols = ["before", "after", "bracket_lo", "bracket_hi", "margin_lo_pct", "verdict"]
    assert pooled.result.switches[cols].equals(sw[cols])


def test_repeats_that_flip_are_a_tie_and_each_run_alone_answers_for_itself(
    seeded: tuple[DashData, Any],
) -> None:
    data, ids = seeded
    ans = ask(data, **REPEAT_SLICE)
    sw = ans.result.switches
    assert sw[["before", "after", "bracket_lo", "bracket_hi"]].values.tolist() == [
        ["TRTLLM", "MEGAMOE_CUTEDSL", 128.0, 256.0]
    ]
    assert sw["after_at_hi_ms"].iat[0] == pytest.approx(0.96)
    assert sw["margin_hi_pct"].iat[0] == pytest.approx(100 * 0.04 / 0.96)
    # the band is the noise model's (analysis.noise, as Best's ties): what one re-run of
    # each side could open between them, from the repeats' run-to-run spreads
    frame = data.cell_frame(Cell(*REPEAT_SLICE.values()))
    configs = configuration_frame(frame[frame[C.NUM_TOKENS] == 256])
    spreads = N.noise_for(estimate_noise(frame), configs).set_index(configs[C.BACKEND])
    band = N.pair_band(
        np.array([spreads.loc["TRTLLM", N.SPREAD]]),
        np.ones(1),
        np.array([spreads.loc["MEGAMOE_CUTEDSL", N.SPREAD]]),
        np.ones(1),
    )[0]
    assert sw["noise_hi_pct"].iat[0] == pytest.approx(band)
    assert sw["margin_hi_pct"].iat[0] < band  # 4.2 % inside what a re-run could give
    assert (sw["verdict"].iat[0], sw["noise_source"].iat[0]) == ("tie within noise", "repeats")
    assert set(ans.result.points["n_repeats"]) == {3}
    first, second, _ = ids["repeats"]
    alone = ask(data, **REPEAT_SLICE, run_id=[first]).result.switches
    assert alone[["bracket_lo", "bracket_hi", "verdict"]].values.tolist() == [
        [128.0, 256.0, "robust"]
    ]
    assert alone["noise_source"].iat[0] == "iteration_spread"
    flipped = ask(data, **REPEAT_SLICE, run_id=[second]).result.switches
    assert flipped[["bracket_lo", "bracket_hi"]].values.tolist() == [[256.0, 512.0]]


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"option": "kernel"}, "option", "allowed: backend, comm, backend+comm, parallel_mode"),
        ({"axis": "tokens"}, "axis", "num_tokens, activated_tokens_per_rank, dispatch_kb"),
        ({"model": "nope"}, "model", "stored: [deepseek_v4_pro, toy_moe]"),
        ({"model": "toy_moe", "hardware": "GB300"}, "hardware", "stored: [H200]"),
        ({"model": "toy_moe", "quant": "NVFP4"}, "quant", "stored: [FP8]"),
        ({"model": "toy_moe", "world_size": 8}, "world_size", "stored: [1]"),
        ({**GEMM_SLICE, "phase": "prefill"}, "phase", "stored: [decode]"),
        ({**GEMM_SLICE, "attention": "tp"}, "attention", "stored: [dp]"),
        ({**GEMM_SLICE, "dispatch": "recv_hotspot"}, "dispatch", "stored: [balanced]"),
        ({**GEMM_SLICE, "run_id": [999]}, "run_id", "runs [999]"),
        ({"phase": "prefill", "cuda_graph": True}, "cuda_graph", "phase=decode"),
    ],
)
def test_bad_input_names_the_parameter_and_the_stored_values(
    seeded: tuple[DashData, Any], params: dict[str, Any], field: str, words: str
) -> None:
    data, _ = seeded
    with pytest.raises(InvalidQuery) as err:
        ask(data, **params)
    assert err.value.field == field
    assert words in err.value.msg


def test_aliases_and_flags(seeded: tuple[DashData, Any]) -> None:
    data, _ = seeded
    for spelled in ("backend comm", "backend_comm", "Backend+Comm"):
        assert ask(data, **GEMM_SLICE, option=spelled).option == "backend+comm"
    on = ask(data, **REPEAT_SLICE, cuda_graph=True)
    assert on.filters["phase"] == "decode" and len(on.result.switches) == 1
    assert ask(data, **REPEAT_SLICE, dispatch="all").filters.get("dispatch") is None
    both = ask(data, **GEMM_SLICE, option="backend+comm")
    assert both.result.switches["after"].tolist()[0] == "GEMM_BETA + NONE"


def test_a_valid_slice_without_comparisons_is_empty(seeded: tuple[DashData, Any]) -> None:
    data, _ = seeded
    # the GEMM sweep has one parallel mode: one option, never a switch
    ans = ask(data, **GEMM_SLICE, option="parallel_mode")
    assert ans.result.switches.empty and len(ans.result.series) == 1
    assert ans.result.series["rank1_sequence"].iat[0] == "DEP"


def test_without_demo_data_the_synthetic_repeat_drops_out(store: Store) -> None:
    runs = repeat_sweeps()
    runs[2].run[C.SYNTHETIC] = True  # run 3 is generated demo data
    for i, sweep in enumerate(runs):
        store.ingest([sweep], f"r{i}".encode(), UploadMeta(hardware="GB300"))
    data = DashData(store, version_ttl=0.0)
    assert set(ask(data).result.points["n_repeats"]) == {3}
    real = ask(data, include_synthetic=False)
    assert set(real.result.points["n_repeats"]) == {2}
    assert real.provenance["synthetic"] is False and len(real.provenance["run_ids"]) == 2
    # runs 1 and 2 disagree at 256 tokens: their medians tie (0.985 each): alphabetical
    assert real.result.switches["after_at_hi_ms"].iat[0] == pytest.approx(0.985)


def test_the_index_is_built_once_per_frame_and_follows_uploads(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    store.ingest([gemm_sweep()], b"xo-gemm", UploadMeta(hardware="H200"))
    first = resolve(data, CrossoverQuery(**GEMM_SLICE)).index
    assert resolve(data, CrossoverQuery(**GEMM_SLICE, axis="dispatch_kb")).index is first
    for i, sweep in enumerate(repeat_sweeps()):
        store.ingest([sweep], f"r{i}".encode(), UploadMeta(hardware="GB300"))
    # uploads to another cell leave this cell's frame and index as they were
    assert resolve(data, CrossoverQuery(**GEMM_SLICE)).index is first
    assert len(ask(data, model="deepseek_v4_pro").result.switches) == 1
    shape = {C.NUM_EXPERTS: 64, C.TOP_K: 2, C.HIDDEN_SIZE: 2048, C.INTERMEDIATE_SIZE: 1024}
    row = {C.BACKEND: "TRTLLM", C.NUM_TOKENS: 4096, C.SCORE_MS: 9.0, C.COMM: "NONE"}
    more = _sweep([row], model="toy_moe", hardware="H200", quant="FP8", world_size=1, **shape)
    store.ingest([more], b"xo-gemm-more", UploadMeta(hardware="H200"))
    assert resolve(data, CrossoverQuery(**GEMM_SLICE)).index is not first


def test_slice_choices_narrow_with_each_filter(seeded: tuple[DashData, Any]) -> None:
    data, _ = seeded
    everything = slice_choices(data, CrossoverQuery())
    assert everything["model"] == ["deepseek_v4_pro", "toy_moe"]
    assert everything["world_size"] == [1, 8] and everything["phase"] == ["decode"]
    toy = slice_choices(data, CrossoverQuery(model="toy_moe"))
    assert toy["hardware"] == ["H200"] and toy["world_size"] == [1]
    # a value that is not stored stops the narrowing there
    odd = slice_choices(data, CrossoverQuery(model="nope"))
    assert odd["hardware"] == ["GB300", "H200"]


def test_slice_names_are_safe_file_names() -> None:
    name = slice_name("backend+comm", "dispatch_kb", {"model": "a b/c", "world_size": 8})
    assert name == "crossovers_backend-comm_dispatch_kb_a-b-c_ws8"


def test_an_empty_store(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    assert ask(data).result.series.empty
    with pytest.raises(InvalidQuery, match="stored: none"):
        ask(data, model="toy_moe")
