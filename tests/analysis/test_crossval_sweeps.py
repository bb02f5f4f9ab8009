"""analysis.crossval_sweeps: commands that run (launcher per hardware, the recipe's own
low-precision combine, only documented bench_moe flags) and rows bench_moe cannot fill."""

from __future__ import annotations

import shlex

import pandas as pd
import pytest

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.crossval_sweeps import (
    BENCH_MOE_FLAGS,
    COMMAND,
    launcher,
    row_command,
    sweep_plan,
    sweep_script,
    unfillable,
)


def _nd(
    wid: str, hw: str, ws: int, backend: str = "TRTLLM", lpc: bool | None = None, **kw: object
) -> dict[str, object]:
    row: dict[str, object] = {
        cc.WORKLOAD_ID: wid,
        cc.STATUS: cc.NO_DATA,
        c.HARDWARE: hw,
        c.MODEL: "deepseek_r1",
        c.QUANT: "NVFP4",
        c.WORLD_SIZE: ws,
        c.ATTENTION_DP: True,
        c.CUDA_GRAPH: True,
        c.NUM_TOKENS: 256,
        c.PARALLEL_MODE: "DEP",
        c.BACKEND: backend,
        c.LOW_PRECISION_COMBINE: lpc,
    }
    row.update(kw)
    return row


def ruled() -> pd.DataFrame:
    return pd.DataFrame(
        [
            _nd("gb300-8", "GB300", 8, lpc=True),
            _nd("gb300-16", "GB300", 16),
            _nd("b300-8", "B300", 8),
            _nd("h200-16", "H200", 16, "CUTLASS"),
            _nd("wide", "GB200", 16, "WIDEEP"),
            _nd("h200-4", "H200", 4, lpc=True, **{c.CUDA_GRAPH: False}),
        ]
    )


@pytest.mark.parametrize(
    ("hw", "ws", "want"),
    [
        (
            "GB300",
            4,
            "mpirun --allow-run-as-root --oversubscribe --bind-to none --map-by slot -np 4",
        ),
        ("GB300", 8, "srun --mpi=pmix -N 2 --ntasks 8 --ntasks-per-node 4"),
        ("GB200", 32, "srun --mpi=pmix -N 8 --ntasks 32 --ntasks-per-node 4"),
        ("B300", 8, "-np 8"),
        ("H200", 16, "srun --mpi=pmix -N 2 --ntasks 16 --ntasks-per-node 8"),
        ("MI300X", 16, "-np 16"),  # unknown hardware: the guide's single-host form
    ],
)
def test_launcher_per_hardware(hw: str, ws: int, want: str) -> None:
    assert want in launcher(hw, ws)


def test_every_command_uses_documented_flags_only() -> None:
    plan = sweep_plan(ruled())
    cmds = list(plan[COMMAND]) + [row_command(r) for r in ruled().to_dict("records")[:4]]
    assert cmds
    for cmd in cmds:
        words = shlex.split(cmd.split(" -m bench_moe", 1)[1])
        flags = {w for w in words if w.startswith("--")}
        assert flags and flags <= BENCH_MOE_FLAGS, flags - BENCH_MOE_FLAGS
        assert "--world_size" in flags and "--balanced_total_num_tokens" in flags


def test_low_precision_combine_follows_the_recipe() -> None:
    plan = sweep_plan(ruled()).set_index(c.HARDWARE)
    gb300 = plan.loc["GB300"]
    by_ws = {int(r[c.WORLD_SIZE]): r[COMMAND] for r in gb300.reset_index().to_dict("records")}
    assert "--use_low_precision_moe_combine" in by_ws[8]  # the recipe sets it
    assert "--use_low_precision_moe_combine" not in by_ws[16]  # the recipe leaves it unset


def test_wideep_rows_are_marked_not_given_a_command() -> None:
    lg = ruled()
    cannot = unfillable(lg)
    assert list(cannot[cc.WORKLOAD_ID]) == ["wide"]
    assert "WIDEEP is not one bench_moe builds" in cannot[cc.REASON].iloc[0]
    plan = sweep_plan(lg)
    assert int(plan["n_rows"].sum()) == len(lg) - 1
    assert "GB200" not in set(plan[c.HARDWARE])
    assert row_command(lg.iloc[4].to_dict()).startswith("bench_moe cannot measure")
    script = sweep_script(plan, "x", cannot)
    assert "# 1 workload(s) bench_moe cannot fill (no command):" in script
    assert "#   wide: WIDEEP on GB200" in script
