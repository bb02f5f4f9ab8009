"""Real-data tier: each match rule's effect on the real ledger (NVIDIA's published sweeps
against the InferenceX / srt-slurm serving configs), the guide's table beside ours, and
the sweeps that fill the gaps.

Pinned: the exact-rule counts the issue reports (DeepSeek-V4-Pro GB300 25/106, prefill
0/54) and properties every rule must have; the per-rule counts are printed (``-s``) for
the report, and checked against each other (a looser rule never matches fewer)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis.capabilities import gpus_per_node
from analysis.crossval import ledger, summary
from analysis.crossval_guide import compare
from analysis.crossval_rules import RULES, apply_rule, causes
from analysis.crossval_sweeps import BENCH_MOE_FLAGS, row_command, sweep_plan, unfillable
from analysis.derived import add_derived
from analysis.serving_map import map_workloads
from ingest.detect import parse_path
from ingest.records import UploadMeta
from ingest.serving_configs import import_directory, points_frame, recipe_configs
from tests.realdata import require, shared_data_dir

pytestmark = pytest.mark.realdata

DATA = shared_data_dir()


@pytest.fixture(scope="module")
def real_ledger() -> pd.DataFrame:
    js = require(DATA / "nvidia_moe_dashboard" / "data.js")
    frames = []
    for run_id, sweep in enumerate(parse_path(Path(js), UploadMeta())):
        run = {k: sweep.run[k] for k in C.RUN_COLUMNS if k != C.RUN_ID}
        frames.append(sweep.candidates.assign(**run, **{C.RUN_ID: run_id}))
    cands = add_derived(pd.concat(frames, ignore_index=True))
    result = import_directory(DATA)
    return ledger(map_workloads(points_frame(result), recipe_configs(result)), cands)


def _counts(lg: pd.DataFrame, model: str, hw: str) -> dict[str, tuple[int, int, int]]:
    """Per rule: (Match, compared, prefill Match) of one model and hardware."""
    out = {}
    for rule in RULES:
        s = summary(apply_rule(lg, rule), ())
        row = s[(s[cc.S_MODEL] == model) & (s[cc.S_HARDWARE] == hw)].iloc[0]
        out[rule] = (int(row[cc.N_MATCH]), int(row[cc.N_COMPARED]), int(row[cc.N_PREFILL_MATCH]))
    return out


def test_each_rule_on_the_real_ledger(real_ledger: pd.DataFrame) -> None:
    table = {}
    for model, hw in (("DeepSeek-V4-Pro", "GB300"), ("GLM-5", "GB300"), ("Kimi-K2", "GB300")):
        table[(model, hw)] = counts = _counts(real_ledger, model, hw)
        exact = counts["exact"][0]
        assert all(counts[r][1] == counts["exact"][1] for r in RULES)  # same compared set
        assert all(counts[r][0] >= exact for r in RULES)  # every rule is looser than exact
    print("\nMatch / compared (prefill Match) per rule:")
    for key, counts in table.items():
        cells = "  ".join(f"{r} {m}/{n} ({p})" for r, (m, n, p) in counts.items())
        print(f"  {key[0]} {key[1]}: {cells}")
    dsv4 = table[("DeepSeek-V4-Pro", "GB300")]
    assert dsv4["exact"] == (25, 106, 0)  # the numbers: 25/106, prefill 0/54
    # In prefill the fused MEGAMOE backend wins every measured point and no deployment
    # uses it: no rule that keeps the backend can match a prefill workload.
    assert dsv4["backend"][2] == dsv4["same_layout"][2] == 0


def test_causes_explain_every_exact_mismatch(real_ledger: pd.DataFrame) -> None:
    cause = causes(real_ledger)
    mism = real_ledger[cc.STATUS] == cc.MISMATCH
    assert (
        cause[mism].notna().all()
        and cause[~mism & (real_ledger[cc.STATUS] == cc.MATCH)].isna().all()
    )
    dec = mism & (real_ledger[C.MODEL] == "deepseek_v4_pro") & (real_ledger[cc.PHASE] == "decode")
    by_cause = cause[dec].value_counts().to_dict()
    print(f"\nDeepSeek-V4-Pro GB300 decode exact Mismatches by cause: {by_cause}")
    assert sum(by_cause.values()) == 27
    guide = compare(real_ledger)
    row = guide[(guide[C.MODEL] == "deepseek_v4_pro") & (guide[cc.PHASE] == "decode")].iloc[0]
    assert row["guide_match"] == 38 and row["ours_match"] == 25
    assert row["n_rule"] + row["n_tie_within_noise"] + row["n_different_winner"] == 27
    print(guide.to_string())


def test_every_no_data_row_has_a_command_and_the_plan_covers_them(
    real_ledger: pd.DataFrame,
) -> None:
    ruled = apply_rule(real_ledger, "exact", command=row_command)
    nd = ruled[ruled[cc.STATUS] == cc.NO_DATA]
    cannot = unfillable(ruled)
    fillable = nd[~nd[cc.WORKLOAD_ID].isin(cannot[cc.WORKLOAD_ID])]
    assert fillable[cc.SWEEP_COMMAND].str.contains("python3 -m bench_moe").all()
    assert fillable[cc.REASON].str.contains("; run: ").all()
    # WIDEEP (and any backend bench_moe does not build) is marked, never given a command
    assert set(cannot[C.BACKEND]) == {"WIDEEP"} and len(cannot) > 0
    marked = nd[nd[cc.WORKLOAD_ID].isin(cannot[cc.WORKLOAD_ID])]
    assert marked[cc.SWEEP_COMMAND].str.startswith("bench_moe cannot measure").all()
    plan = sweep_plan(ruled)
    assert int(plan["n_rows"].sum()) == len(fillable)
    for cmd in plan["command"]:
        flags = {w for w in shlex.split(cmd.split(" -m bench_moe", 1)[1]) if w.startswith("--")}
        assert flags <= BENCH_MOE_FLAGS
        ws = int(cmd.split("--world_size ")[1].split()[0])
        hw = cmd.rsplit("_", 1)[1].removesuffix(".json").upper()
        per_node = gpus_per_node(hw)
        # no single-host mpirun wider than one node: srun with GPUs-per-node ranks instead
        if per_node is not None and ws > per_node:
            assert f"--ntasks-per-node {per_node}" in cmd and "mpirun" not in cmd
    print(f"\n{len(plan)} commands, {len(cannot)} rows bench_moe cannot fill (WIDEEP)")
    # Every GB200 row is empty (NVIDIA published only B300 / GB300), and the GLM-5 GB300
    # prefill workloads run at world size 2, never swept.
    assert (ruled[ruled[C.HARDWARE] == "GB200"][cc.STATUS] != cc.MATCH).all()
    glm = plan[(plan[C.MODEL] == "glm_5") & (plan[C.HARDWARE] == "GB300")]
    assert glm[C.WORLD_SIZE].tolist() == [2] and "--no_cuda_graph" in glm["command"].iloc[0]
    print(f"\n{len(plan)} commands cover {len(nd)} no-data workloads")


def test_documented_flags_are_bench_moe_s_own() -> None:
    """Every flag the commands may use is in bench_moe's documented CLI table
    (shared/reference/bench_moe_schema.md 5.1) or the guide's example."""
    doc = require(DATA.parent / "reference" / "bench_moe_schema.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"--[a-z_]+", doc))
    assert documented >= BENCH_MOE_FLAGS, BENCH_MOE_FLAGS - documented
