"""Sweeps to run next: the bench_moe commands that fill the ledger's "no data" rows.

One command per sweep group: rows sharing hardware, model, quant, world size, attention
family (DP/TP) and CUDA graph on/off, their num_tokens merged (sorted, distinct). That is
the smallest set bench_moe allows: one invocation runs one model, quant and world size
on one machine, and the ledger compares a workload against every layout of its attention
family under one CUDA-graph setting, so a group is exactly one invocation and no two
groups can share one without measuring layouts or graph settings no row needs.

The command follows the guide's bench_moe usage ("Tuning a Specific Workload"): the
launcher the hardware needs (:func:`launcher`: the guide's single-host ``mpirun ... -np
<ws>`` when the world size fits one node, else ``srun`` over ceil(ws / GPUs per node)
nodes with the hardware's GPUs per node as ranks per node), ``--world_size``,
``--model``, ``--quant``,
``--balanced_total_num_tokens`` (instance-wide totals for attention DP, per-rank batch
for attention TP - the ledger's num_tokens already is that), the attention family pinned
as the list of its ``--parallel_mode`` values (DEP/DTP or TEP/TTP plus the default
hybrids of the world size, ``bench_moe_schema.md`` 2.11; more than one value turns the
parallel axis on) with ``--search backend comm``, ``--no_cuda_graph`` for prefill
(graph off) rows, and ``--use_low_precision_moe_combine`` only where the recipe sets
``use_low_precision_moe_combine`` (the low-precision combine is part of the sweep key).

Rows bench_moe cannot fill -- the deployed backend is not one bench_moe builds (WIDEEP,
VANILLA, ...: :data:`BENCH_MOE_BACKENDS`) -- get no command: :func:`unfillable` lists
them with the reason. Every flag a command uses is one bench_moe documents
(:data:`BENCH_MOE_FLAGS`, ``bench_moe_schema.md`` 5.1).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.capabilities import gpus_per_node

LAUNCHER = (
    "PYTHONPATH=tests/microbenchmarks:${{PYTHONPATH:-}} mpirun --allow-run-as-root "
    "--oversubscribe --bind-to none --map-by slot -np {ws} python3 -m bench_moe"
)
# more than one node: one task per GPU, the hardware's GPUs per node on each node
SRUN_LAUNCHER = (
    "PYTHONPATH=tests/microbenchmarks:${{PYTHONPATH:-}} srun --mpi=pmix -N {nodes} "
    "--ntasks {ws} --ntasks-per-node {per_node} python3 -m bench_moe"
)
# The MoE backends bench_moe builds (bench_moe_schema.md, MoeBackendType)
BENCH_MOE_BACKENDS = frozenset(
    {"CUTLASS", "TRTLLM", "CUTEDSL", "DEEPGEMM", "DENSEGEMM", "MEGAMOE_DEEPGEMM", "MEGAMOE_CUTEDSL"}
)
# The command-line flags bench_moe documents (bench_moe_schema.md 5.1, the guide)
BENCH_MOE_FLAGS = frozenset(
    {
        "--world_size", "--model", "--num_experts", "--top_k", "--hidden_size",
        "--intermediate_size", "--n_group", "--topk_group", "--n_shared_experts",
        "--shared_expert_mode", "--quant", "--routing_method", "--activation",
        "--balanced_total_num_tokens", "--num_tokens", "--per_rank_num_tokens",
        "--routing_mode", "--projection_policy", "--comm_pattern", "--expert_pattern",
        "--routing_pattern_file", "--routing_dump_matrix", "--routing_seed",
        "--enable_perfect_router", "--parallel_mode", "--moe_ep_size", "--moe_tp_size",
        "--enable_attention_dp", "--backend", "--comm_method", "--search", "--no_cuda_graph",
        "--warmup", "--iters", "--fast_autotune", "--nsys", "--per_candidate_timeout_s",
        "--dtype", "--use_low_precision_moe_combine", "--random_seed", "--analysis",
        "--max_configs", "--time_budget_minutes", "--config_file", "--output_file",
        "--analysis_workbook_file", "--resume_from", "--checkpoint_every",
    }
)  # fmt: skip


def launcher(hardware: str, world_size: int) -> str:
    """The launcher prefix for ``world_size`` ranks on ``hardware``: the guide's
    single-host mpirun when they fit one node (or the hardware is unknown), else srun
    over ceil(world_size / GPUs per node) nodes, GPUs-per-node ranks on each."""
    per_node = gpus_per_node(hardware)
    if per_node is None or world_size <= per_node:
        return LAUNCHER.format(ws=world_size)
    nodes = -(-world_size // per_node)
    return SRUN_LAUNCHER.format(nodes=nodes, ws=world_size, per_node=per_node)


def bench_moe_can_fill(backend: object) -> bool:
    """True when bench_moe builds the deployed ``backend`` (None: unknown, searched)."""
    return (
        backend is None
        or (isinstance(backend, float) and pd.isna(backend))
        or (str(backend).upper() in BENCH_MOE_BACKENDS)
    )


SEARCH_SCOPE = "backend comm"
# Default hybrid (tp k, ep m) factors per world size (bench_moe --search parallel).
HYBRIDS: dict[int, tuple[tuple[int, int], ...]] = {
    4: ((2, 2),),
    8: ((2, 4), (4, 2)),
    16: ((4, 4),),
    32: ((4, 8), (8, 4)),
    64: ((8, 8),),
}
# Quant values bench_moe takes as the model default (no --quant flag).
UNQUANTIZED = frozenset({"BF16"})

SWEEP_KEY: tuple[str, ...] = (
    c.HARDWARE,
    c.MODEL,
    c.QUANT,
    c.WORLD_SIZE,
    c.ATTENTION_DP,
    c.CUDA_GRAPH,
    c.LOW_PRECISION_COMBINE,
)
PARALLEL_MODES = "parallel_modes"
TOKENS = "num_tokens_list"
N_ROWS = "n_rows"
COMMAND = "command"
OUTPUT_FILE = "output_file"
PLAN_COLUMNS: tuple[str, ...] = (
    *SWEEP_KEY,
    PARALLEL_MODES,
    TOKENS,
    N_ROWS,
    OUTPUT_FILE,
    COMMAND,
)


def family_modes(world_size: int, attention_dp: bool, deployed: str | None = None) -> list[str]:
    """The ``--parallel_mode`` values of one attention family at ``world_size``: pure EP,
    pure TP, the default hybrids, and the deployed mode when it is none of those."""
    a = "D" if attention_dp else "T"
    modes = [f"{a}EP", f"{a}TP"]
    modes += [f"{a}TP{k}EP{m}" for k, m in HYBRIDS.get(int(world_size), ())]
    if deployed and deployed.upper() not in modes and deployed.upper()[0] == a:
        modes.append(deployed.upper())
    return modes


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def output_file(key: Mapping[str, Any]) -> str:
    """``out/<model>_<quant>_ws<N>_<D|T>_<graph|eager>_<hardware>.json``."""
    graph = "graph" if bool(key[c.CUDA_GRAPH]) else "eager"
    attn = "D" if bool(key[c.ATTENTION_DP]) else "T"
    name = f"{key[c.MODEL]}_{key[c.QUANT]}_ws{int(key[c.WORLD_SIZE])}_{attn}_{graph}"
    return f"out/{_slug(name + '_' + str(key[c.HARDWARE]).lower())}.json"


def bench_command(key: Mapping[str, Any], tokens: list[int], modes: list[str]) -> str:
    """The bench_moe command line for one sweep group (``SWEEP_KEY`` values in ``key``)."""
    ws = int(key[c.WORLD_SIZE])
    parts = [
        launcher(str(key[c.HARDWARE]), ws),
        f"--world_size {ws}",
        f"--model {shlex.quote(str(key[c.MODEL]))}",
    ]
    if str(key[c.QUANT]).upper() not in UNQUANTIZED:
        parts.append(f"--quant {shlex.quote(str(key[c.QUANT]))}")
    parts += [
        f"--parallel_mode {' '.join(modes)}",
        f"--search {SEARCH_SCOPE}",
        f"--balanced_total_num_tokens {' '.join(str(t) for t in tokens)}",
    ]
    if not bool(key[c.CUDA_GRAPH]):
        parts.append("--no_cuda_graph")
    if _flag(key.get(c.LOW_PRECISION_COMBINE)):
        parts.append("--use_low_precision_moe_combine")
    parts.append(f"--output_file {output_file(key)}")
    return " ".join(parts)


def _flag(v: Any) -> bool:
    """A nullable boolean cell as bool (None / NA: False)."""
    if v is None:
        return False
    try:
        return False if pd.isna(v) else bool(v)
    except (TypeError, ValueError):
        return bool(v)


def row_command(row: Mapping[str, Any]) -> str:
    """The bench_moe command that would fill one "no data" ledger row (its own num_tokens),
    or why bench_moe cannot fill it (a deployed backend bench_moe does not build)."""
    if not bench_moe_can_fill(row.get(c.BACKEND)):
        return unfillable_reason(row)
    modes = family_modes(
        int(row[c.WORLD_SIZE]), bool(row[c.ATTENTION_DP]), _text(row.get(c.PARALLEL_MODE))
    )
    return bench_command(row, [int(row[c.NUM_TOKENS])], modes)


def _text(v: Any) -> str | None:
    return None if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)


def unfillable_reason(row: Mapping[str, Any]) -> str:
    """Why bench_moe cannot fill a row: its deployed backend is not one bench_moe builds."""
    return (
        f"bench_moe cannot measure this row: the deployed backend {row.get(c.BACKEND)} is not "
        f"one bench_moe builds ({', '.join(sorted(BENCH_MOE_BACKENDS))})"
    )


UNFILLABLE_COLUMNS: tuple[str, ...] = (
    cc.WORKLOAD_ID,
    c.HARDWARE,
    c.MODEL,
    c.WORLD_SIZE,
    c.BACKEND,
    cc.REASON,
)


def unfillable(ruled: pd.DataFrame) -> pd.DataFrame:
    """The "no data" rows bench_moe cannot fill (``UNFILLABLE_COLUMNS``), with the reason,
    in ledger order: marked instead of given a command."""
    nd = ruled[ruled[cc.STATUS] == cc.NO_DATA]
    bad = nd[~nd[c.BACKEND].map(bench_moe_can_fill).astype(bool)]
    out = bad.assign(**{cc.REASON: [unfillable_reason(r) for r in bad.to_dict("records")]})
    return out.reindex(columns=list(UNFILLABLE_COLUMNS)).reset_index(drop=True)


def sweep_plan(ruled: pd.DataFrame) -> pd.DataFrame:
    """The smallest set of commands covering every "no data" row bench_moe can fill
    (``PLAN_COLUMNS``), one per ``SWEEP_KEY`` group, sorted by that key. Empty frame when
    nothing is missing. Rows it cannot fill are :func:`unfillable`'s."""
    nd = ruled[ruled[cc.STATUS] == cc.NO_DATA]
    nd = nd[nd[c.BACKEND].map(bench_moe_can_fill).astype(bool)]
    rows: list[dict[str, Any]] = []
    if nd.empty:
        return pd.DataFrame(columns=list(PLAN_COLUMNS))
    keyed = nd.assign(
        **{
            c.HARDWARE: nd[c.HARDWARE].astype(str).str.upper(),
            c.LOW_PRECISION_COMBINE: [
                _flag(v) for v in nd.get(c.LOW_PRECISION_COMBINE, pd.Series(None, index=nd.index))
            ],
        }
    )
    for key_vals, g in keyed.groupby(list(SWEEP_KEY), sort=True, dropna=False):
        key = dict(zip(SWEEP_KEY, key_vals, strict=True))
        tokens = sorted({int(t) for t in g[c.NUM_TOKENS]})
        modes = family_modes(int(key[c.WORLD_SIZE]), bool(key[c.ATTENTION_DP]))
        for m in sorted({str(x).upper() for x in g.get(c.PARALLEL_MODE, pd.Series()).dropna()}):
            if m not in modes and m[0] == modes[0][0]:
                modes.append(m)  # a deployed layout outside the default set
        rows.append(
            {
                **key,
                PARALLEL_MODES: " ".join(modes),
                TOKENS: " ".join(str(t) for t in tokens),
                N_ROWS: len(g),
                OUTPUT_FILE: output_file(key),
                COMMAND: bench_command(key, tokens, modes),
            }
        )
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


def sweep_script(plan: pd.DataFrame, slice_name: str, cannot: pd.DataFrame | None = None) -> str:
    """A POSIX shell script running every command of ``plan`` (one per group, each
    preceded by a comment naming its hardware and the rows it fills), then the rows
    bench_moe cannot fill (``cannot``) as comments."""
    lines = [
        "#!/bin/sh",
        f"# bench_moe sweeps that fill the cross-validation 'no data' rows of {slice_name}.",
        "# Run each block on the hardware its comment names, from a TensorRT-LLM checkout.",
        "set -eu",
        "mkdir -p out",
    ]
    if plan.empty:
        lines.append("# nothing to run: every mappable workload has bench_moe data")
    for rec in plan.to_dict("records"):
        lines += [
            "",
            f"# {rec[c.HARDWARE]}: {rec[N_ROWS]} workload(s), num_tokens {rec[TOKENS]}",
            str(rec[COMMAND]),
        ]
    if cannot is not None and len(cannot):
        lines += ["", f"# {len(cannot)} workload(s) bench_moe cannot fill (no command):"]
        lines += [
            f"#   {r[cc.WORKLOAD_ID]}: {r[c.BACKEND]} on {r[c.HARDWARE]}"
            for r in cannot.to_dict("records")
        ]
    return "\n".join(lines) + "\n"


def script_name(model: str | None, hardware: str | None, phase: str | None) -> str:
    """``crossval-sweeps-<model>-<hardware>-<phase>.sh`` ("all" for an open filter)."""
    parts = [_slug(x or "all") for x in (model, hardware.lower() if hardware else None, phase)]
    return "crossval-sweeps-" + "-".join(parts) + ".sh"


NEEDED = "needed_num_tokens"
MEASURED = "measured_num_tokens_used"
MISSING = "missing_num_tokens"
N_WORKLOADS = "n_workloads"
N_COVERED = "n_covered"
COVERAGE_COLUMNS: tuple[str, ...] = (*SWEEP_KEY, N_WORKLOADS, N_COVERED, NEEDED, MEASURED, MISSING)


def coverage(ledger_df: pd.DataFrame) -> pd.DataFrame:
    """What the serving configs need vs what is measured, per ``SWEEP_KEY`` group of the
    mappable workloads: workloads, how many are compared (Match or Mismatch), the
    distinct num_tokens needed, the measured num_tokens the ledger used, and the needed
    ones without data (space-separated, ascending). Sorted by the key."""
    lg = ledger_df[ledger_df[cc.STATUS].isin([cc.MATCH, cc.MISMATCH, cc.NO_DATA])]
    if lg.empty:
        return pd.DataFrame(columns=list(COVERAGE_COLUMNS))
    lg = lg.assign(**{c.HARDWARE: lg[c.HARDWARE].astype(str).str.upper()})
    rows = []
    for key_vals, g in lg.groupby(list(SWEEP_KEY), sort=True, dropna=False):
        covered = g[cc.STATUS].isin([cc.MATCH, cc.MISMATCH])
        rows.append(
            {
                **dict(zip(SWEEP_KEY, key_vals, strict=True)),
                N_WORKLOADS: len(g),
                N_COVERED: int(covered.sum()),
                NEEDED: _join(g[c.NUM_TOKENS]),
                MEASURED: _join(g.loc[covered, cc.MEASURED_NUM_TOKENS]),
                MISSING: _join(g.loc[~covered, c.NUM_TOKENS]),
            }
        )
    return pd.DataFrame(rows, columns=list(COVERAGE_COLUMNS))


def _join(values: pd.Series) -> str:
    return " ".join(str(v) for v in sorted({int(x) for x in values.dropna()}))
