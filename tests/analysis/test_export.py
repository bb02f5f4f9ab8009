from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis.export import (
    Provenance,
    ServingInputs,
    config_dict,
    env_line,
    recommended_config_yaml,
)
from analysis.tables import to_csv_text, to_json_records, to_json_text
from analysis.tree import Deployment, recommend


def dep(**kw: object) -> Deployment:
    base = dict(
        hardware="B300",
        num_experts=384,
        top_k=6,
        hidden_size=7168,
        quant="NVFP4",
        world_size=16,
        attention_dp=True,
        cuda_graph=True,
        num_tokens=250,
        model="deepseek_v4_pro",
    )
    base.update(kw)
    return Deployment(**base)  # type: ignore[arg-type]


PROV = Provenance(run_ids=(3, 7), trtllm_version="1.3.0rc26", date="2026-09-13")


def test_yaml_round_trips_with_header() -> None:
    rec = recommend(dep())
    text = recommended_config_yaml(rec, PROV)
    parsed = yaml.safe_load(text)
    # 250 tokens over 16 attention-DP ranks: 16 requests per rank (no MTP)
    assert parsed == {
        "tensor_parallel_size": 16,
        "pipeline_parallel_size": 1,
        "moe_expert_parallel_size": 16,
        "moe_tensor_parallel_size": 1,
        "enable_attention_dp": True,
        "max_batch_size": 16,
        "max_num_tokens": 16,
        "cuda_graph_config": {"enable_padding": True, "max_batch_size": 16},
        "moe_config": {"backend": "CUTEDSL"},
    }
    header = [ln for ln in text.splitlines() if ln.startswith("#")]
    assert any("run ids: 3, 7" in h for h in header)
    assert any("1.3.0rc26" in h for h in header) and any("2026-09-13" in h for h in header)
    assert any("TRTLLM_FORCE_COMM_METHOD=DEEPEPLOWLATENCY" in h for h in header)
    assert env_line(rec) == "TRTLLM_FORCE_COMM_METHOD=DEEPEPLOWLATENCY"


def test_prefill_has_null_graph_and_no_env() -> None:
    rec = recommend(dep(hardware="GB300", world_size=8, cuda_graph=False, num_tokens=8192))
    parsed = yaml.safe_load(recommended_config_yaml(rec, Provenance()))
    assert parsed["cuda_graph_config"] is None
    assert parsed["moe_config"]["backend"] == "TRTLLM"
    assert env_line(rec) is None


def test_attention_tp_batch_is_per_rank_tokens() -> None:
    rec = recommend(dep(hardware="GB300", world_size=8, attention_dp=False, num_tokens=32))
    assert config_dict(rec)["cuda_graph_config"] == {"enable_padding": True, "max_batch_size": 32}
    assert config_dict(rec)["enable_attention_dp"] is False


def test_mtp_graph_batch_counts_requests_not_tokens() -> None:
    # the case: 64 requests per rank with MTP 3 are 256 MoE tokens per rank
    # (num_tokens 2048 over 8 DP ranks); CUDA graphs and max_batch_size count the 64
    rec = recommend(dep(hardware="GB300", world_size=8, num_tokens=2048))
    cfg = config_dict(rec, ServingInputs(mtp=3))
    assert cfg["cuda_graph_config"] == {"enable_padding": True, "max_batch_size": 64}
    assert (cfg["max_batch_size"], cfg["max_num_tokens"]) == (64, 256)
    assert cfg["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    text = recommended_config_yaml(rec, PROV, serving=ServingInputs(mtp=3, isl=8192, osl=1024))
    assert yaml.safe_load(text)["max_seq_len"] == 9216
    assert "# error:" not in text and "capture batches of 1, 2, 4, 8" in text


def test_given_batch_and_token_caps_win_over_the_load() -> None:
    rec = recommend(dep(hardware="GB300", world_size=8, num_tokens=64))
    cfg = config_dict(rec, ServingInputs(mtp=3, max_batch_size=32, max_num_tokens=160))
    assert (cfg["max_batch_size"], cfg["max_num_tokens"]) == (32, 160)
    assert cfg["cuda_graph_config"]["max_batch_size"] == 32  # type: ignore[index]


def test_prefill_document_takes_the_typed_tokens_and_whole_prompts() -> None:
    rec = recommend(dep(hardware="GB300", world_size=8, cuda_graph=False, num_tokens=65536))
    cfg = config_dict(rec, ServingInputs(mtp=1, max_num_tokens=16640, isl=8192))
    assert (cfg["max_batch_size"], cfg["max_num_tokens"]) == (2, 16640)
    assert cfg["cuda_graph_config"] is None and cfg["disable_overlap_scheduler"] is True
    assert cfg["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 1}
    # without max_num_tokens: bench_moe's global 65536 over 8 DP ranks
    assert config_dict(rec)["max_num_tokens"] == 8192


def test_header_cannot_break_yaml() -> None:
    text = recommended_config_yaml(recommend(dep()), Provenance(produced_by="a\nb: c"))
    assert "b: c" not in yaml.safe_load(text)


FRAME = pd.DataFrame(
    {
        "b": [1.5, np.nan, np.inf],
        "a": pd.array([1, None, 3], dtype="Int64"),
        "s": ["x", None, "z,y"],
        "t": pd.to_datetime(["2026-01-01", None, "2026-01-03"]),
    }
)


def test_json_records_null_and_order() -> None:
    recs = to_json_records(FRAME)
    assert list(recs[0]) == ["b", "a", "s", "t"]
    assert recs[1] == {"b": None, "a": None, "s": None, "t": None}
    assert recs[2]["b"] is None and recs[0]["t"] == "2026-01-01T00:00:00"
    assert isinstance(recs[0]["a"], int)
    assert json.loads(to_json_text(FRAME, ["s", "a"]))[2] == {"s": "z,y", "a": 3}
    with pytest.raises(KeyError):
        to_json_records(FRAME, ["nope"])


def test_csv_text() -> None:
    text = to_csv_text(FRAME, ["a", "b", "s"])
    assert text.splitlines() == ["a,b,s", "1,1.5,x", ",,", '3,,"z,y"']
    back = pd.read_csv(__import__("io").StringIO(to_csv_text(FRAME)))
    assert list(back.columns) == ["b", "a", "s", "t"]


# ------------------------------------------------------------------ issue 10: validity, comm
def _nvidia_row(**kw: object) -> dict[str, object]:
    """A NVIDIA-dashboard-style row: actual comm known, no requested comm, no run date
    (a categorical frame hands the missing date out as NaN)."""
    from analysis.derived import add_derived
    from tests.factories import make_candidates

    row = {
        "hardware": "B300",
        "world_size": 16,
        "num_tokens": 8192,
        "backend": "CUTEDSL",
        "comm": "DEEPEPLOWLATENCY",
        "comm_requested": None,
        "run_date": None,
        "source_format": "nvidia_dashboard",
    }
    row.update(kw)
    out = add_derived(make_candidates([row])).iloc[0].to_dict()
    out["run_date"] = float("nan")
    return out


def test_measured_comm_is_forced_when_auto_would_pick_another_and_no_nan() -> None:
    """The issue: "leave AUTO (expected DEEPEPLOWLATENCY)" with no env line, and
    "# date: nan". AUTO on B300 (no MNNVL, NVFP4 activations) picks ALLGATHER, so the
    measured DEEPEPLOWLATENCY must be forced; the missing date is a comment."""
    from analysis.measured import candidate_recommendation

    rec = candidate_recommendation(_nvidia_row())
    assert (rec.comm, rec.force_comm) == ("DEEPEPLOWLATENCY", True)
    text = recommended_config_yaml(rec, Provenance(run_ids=(6,), date=float("nan")))  # type: ignore[arg-type]
    assert "nan" not in text.lower().replace("nanoseconds", "")
    assert "# date: not recorded" in text
    assert "# comm: set TRTLLM_FORCE_COMM_METHOD=DEEPEPLOWLATENCY on every rank" in text
    assert "AUTO would pick ALLGATHER" in text
    assert env_line(rec) == "TRTLLM_FORCE_COMM_METHOD=DEEPEPLOWLATENCY"


def test_megamoe_exports_none_and_no_env() -> None:
    from analysis.measured import candidate_recommendation

    rec = candidate_recommendation(_nvidia_row(backend="MEGAMOE_CUTEDSL", comm="NONE"))
    text = recommended_config_yaml(rec, Provenance())
    assert env_line(rec) is None and rec.expected_comm == "NONE"
    assert "# comm: NONE (MEGAMOE_CUTEDSL fuses dispatch and combine" in text
    # the low-precision-combine flag has no effect on the fused path: not written
    assert yaml.safe_load(text)["moe_config"] == {"backend": "MEGAMOE_CUTEDSL"}


def test_a_backend_trtllm_does_not_have_is_an_error_and_uncovered_is_a_warning() -> None:
    from analysis.capabilities import check_export
    from analysis.export import export_check
    from analysis.measured import candidate_recommendation

    foreign = export_check(candidate_recommendation(_nvidia_row(backend="TORCH_BMM_PADDED")))
    assert (
        not foreign.ok
        and "TORCH_BMM_PADDED is not a TensorRT-LLM MoE backend" in (foreign.errors[0])
    )
    # DEEPGEMM runs FP8 block-scale only: measured on NVFP4 it is outside the matrix
    odd = check_export("DEEPGEMM", "ALLGATHER", "NVFP4", "B300", forced=True)
    assert odd.ok and "not listed for SM103 x NVFP4" in odd.warnings[0]
    hopper = check_export("CUTLASS", "AUTO", "FP8_BLOCK_SCALES", "H200", forced=False)
    assert hopper.ok and not hopper.warnings  # coverage is the tree's one answer:
    h200 = recommend(dep(hardware="H200", quant="FP8_BLOCK_SCALES"))
    assert not h200.in_guide_coverage
    warned = export_check(h200)
    assert warned.warnings[-1].startswith("outside the guide's coverage: ")
    assert "not H200" in warned.warnings[-1]
    text_h200 = recommended_config_yaml(h200, Provenance())
    assert "# coverage: outside the guide's coverage: " in text_h200
    nv = check_export("TRTLLM", "NVLINK_TWO_SIDED", "NVFP4", "B300", forced=True)
    assert any("needs MNNVL" in w for w in nv.warnings)
    bad = check_export("TRTLLM", "TORCH_A2A", "NVFP4", "GB300", forced=True)
    assert not bad.ok and "is not a TensorRT-LLM strategy" in bad.errors[0]
    text = recommended_config_yaml(candidate_recommendation(_nvidia_row()), Provenance(), odd)
    assert "# warning: DEEPGEMM is not listed" in text
