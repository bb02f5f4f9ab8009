"""/api/v1/planner through the real app, on DuckDB and (marker postgres) PostgreSQL.
The Te fit is checked end to end: a synthetic sweep whose scores follow a known linear
law per expert (``t = K3*be + K4``) is ingested, and the endpoint must report source
"fit" with that slope and intercept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from analysis import columns as C
from analysis.planner import GPUS, MODELS, user_fit
from analysis.planner.perf_model import expert_node_time_ms
from analysis.planner.plans import ALTERNATIVE_COLUMNS, NA_SWEEP_COLUMNS
from analysis.planner.te_fit import dispatch_combine_ms
from db.store import Store
from ingest.records import Sweep, UploadMeta
from moedash.app import create_app
from moedash.settings import Settings
from tests.factories.sweeps import make_run

K3, K4 = 0.004, 0.3  # ms per token per expert, ms per expert (one GPU, whole expert)
URL = "/api/v1/planner"
MIX = "mixtral_8x22b"


def linear_sweep(
    model: str = "mixtral_8x22b",
    hardware: str = "H20",
    k3: float = K3,
    k4: float = K4,
    key: str = "",
) -> Sweep:
    """A decode sweep whose per-expert time is exactly ``k3*be + k4``.

    Rows at EP 8 / TP 1 and EP 4 / TP 2 over num_tokens 64..4096; ``score_ms`` is the
    rank time ``(k3*be + k4) * E / (ep*tp)`` with ``be = num_tokens*K/E``. Distractors
    the fit must ignore: prefill rows, a hotspot dispatch row and a failed row, all with
    wild scores.
    """
    spec = MODELS[model]
    e, k = spec.num_experts, spec.top_k
    link = GPUS[hardware].intra_node_gb_s if hardware in GPUS else 450.0
    rows: list[dict[str, object]] = []
    for ep, tp in ((8, 1), (4, 2)):
        for tokens in (64, 128, 256, 512, 1024, 2048, 4096):
            be = tokens * k / e
            # the rank's GEMM time plus the dispatch/combine the fit takes back out
            comm = dispatch_combine_ms(tokens, ep, spec, link, 2.0)
            score = (k3 * be + k4) * e / (ep * tp) + comm
            rows.append(
                {
                    C.NUM_TOKENS: tokens,
                    C.MOE_EP_SIZE: ep,
                    C.MOE_TP_SIZE: tp,
                    C.CUDA_GRAPH: True,
                    C.DISPATCH: "balanced",
                    C.STATUS: "success",
                    C.SCORE_MS: score,
                }
            )
    rows += [
        {
            C.NUM_TOKENS: 1024,
            C.MOE_EP_SIZE: 8,
            C.MOE_TP_SIZE: 1,
            C.CUDA_GRAPH: False,
            C.DISPATCH: "balanced",
            C.STATUS: "success",
            C.SCORE_MS: 99.0,
        },
        {
            C.NUM_TOKENS: 1024,
            C.MOE_EP_SIZE: 8,
            C.MOE_TP_SIZE: 1,
            C.CUDA_GRAPH: True,
            C.DISPATCH: "recv_hotspot",
            C.STATUS: "success",
            C.SCORE_MS: 77.0,
        },
        {
            C.NUM_TOKENS: 2048,
            C.MOE_EP_SIZE: 8,
            C.MOE_TP_SIZE: 1,
            C.CUDA_GRAPH: True,
            C.DISPATCH: "balanced",
            C.STATUS: "failed",
            C.SCORE_MS: None,
            C.FAILURE_CATEGORY: "timed_phase_error",
        },
    ]
    n = len(rows)
    data: dict[str, list[object]] = {c: [None] * n for c in C.CANDIDATE_COLUMNS}
    for i, row in enumerate(rows):
        data[C.CANDIDATE_INDEX][i] = i
        data[C.PARALLEL_MODE][i] = "DEP"
        data[C.ATTENTION_DP][i] = True
        data[C.ATTN][i] = "D"
        data[C.BACKEND][i] = data[C.REQUESTED_BACKEND][i] = "CUTLASS"
        data[C.COMM][i] = "NVLINK_ONE_SIDED"
        for col, value in row.items():
            data[col][i] = value
    frame = pd.DataFrame(data, columns=list(C.CANDIDATE_COLUMNS))
    frame[C.SCORE_MS] = pd.to_numeric(frame[C.SCORE_MS], errors="coerce")
    run = make_run(
        **{
            C.MODEL: model,
            C.NUM_EXPERTS: e,
            C.TOP_K: k,
            C.HIDDEN_SIZE: spec.hidden_size,
            C.INTERMEDIATE_SIZE: spec.intermediate_size,
            C.QUANT: "BF16",
            C.HARDWARE: hardware,
            C.WORLD_SIZE: 8,
            C.SYNTHETIC: True,
            "model_json": json.dumps({"name": model}),
        }
    )
    return Sweep(key=key, run=run, candidates=frame)


def ingest_linear(store: Store, hardware: str = "H20", **kw: object) -> None:
    sweep = linear_sweep(hardware=hardware, **kw)  # type: ignore[arg-type]
    meta = UploadMeta(
        hardware=hardware, trtllm_version="v1.3.0rc26", filename=f"linear-{hardware}.json"
    )
    store.ingest([sweep], f"linear {hardware} {kw}".encode(), meta, uploaded_by="test")


@pytest.fixture
def client(db_url: str, store: Store) -> Iterator[TestClient]:
    app = create_app(Settings(database_url=db_url, enable_dashboard=False), store=store)
    with TestClient(app) as c:
        yield c


def _detail(resp: object) -> dict[str, object]:
    body = resp.json()  # type: ignore[attr-defined]
    assert set(body) == {"detail"} and len(body["detail"]) >= 1
    return body["detail"][0]  # type: ignore[no-any-return]


# ------------------------------------------------------------------ catalogue
def test_catalog_lists_models_gpus_and_stored_sweeps(client: TestClient, store: Store) -> None:
    ingest_linear(store)
    body = client.get(f"{URL}/catalog").json()
    names = {m["name"] for m in body["models"]}
    assert names == set(MODELS)
    assert [g["name"] for g in body["gpus"]] == list(GPUS)
    h20 = next(g for g in body["gpus"] if g["name"] == "H20")
    assert h20["price"] == 1.85 and h20["memory_gb"] == 96
    mixtral = next(m for m in body["models"] if m["name"] == "mixtral_8x22b")
    assert mixtral["stored_sweeps"] == [{"hardware": "H20", "quant": "BF16", "runs": 1}]
    assert next(m for m in body["models"] if m["name"] == "dbrx")["stored_sweeps"] == []
    assert body["limits"]["max_estimated_evaluations"] == 40_000
    assert body["defaults"]["model"] == "mixtral_8x22b"


# ------------------------------------------------------------------ plans
def test_plan_defaults_return_every_section(client: TestClient) -> None:
    resp = client.post(f"{URL}/plan", json={})
    assert resp.status_code == 200
    body = resp.json()
    best = body["best"]
    assert best["attention_gpu"] == best["expert_gpu"] == "H20"
    assert best["tbt_ms"] <= 150.0
    assert [c["label"] for c in best["constraints"]] == ["Ta ≈ Te", "Tc < Tf", "m ≥ 2·(1 + Tc/Tf)"]
    for c in best["constraints"]:
        assert isinstance(c["met"], bool) and c["value"] > 0 and c["bound"] > 0
        assert "=" in c["detail"]
    depth = best["constraints"][2]
    assert depth["value"] == best["m"]
    assert depth["bound"] == pytest.approx(2 * (1 + best["tc_ms"] / best["tf_ms"]))
    assert body["colocated"]["gpu"] == "H20"
    assert body["disaggregation_gain"] == pytest.approx(
        best["tput_per_cost"] / body["colocated"]["tput_per_cost"]
    )
    assert body["verdict"].startswith("disaggregation")
    assert 1 <= len(body["alternatives"]) <= 20 <= body["n_alternatives"]
    assert set(body["alternatives"][0]) == set(ALTERNATIVE_COLUMNS)
    assert body["alternatives"][0]["tput_per_cost"] == pytest.approx(best["tput_per_cost"])
    costs = [a["tput_per_cost"] for a in body["alternatives"]]
    assert costs == sorted(costs, reverse=True)
    sweep = pd.DataFrame(body["na_sweep"])
    assert list(sweep.columns) == list(NA_SWEEP_COLUMNS)
    assert best["na"] in set(sweep["na"])
    lanes = {r["lane"] for r in body["timeline"]}
    assert lanes == {"attention", "M2N", "expert", "N2M"}
    assert len(body["timeline"]) == 4 * best["m"]
    fit = body["expert_fits"][0]
    assert fit["source"] == "roofline" and fit["n_points"] == 0 and fit["r2"] is None


def test_fit_from_stored_sweep_recovers_the_linear_law(client: TestClient, store: Store) -> None:
    ingest_linear(store)
    body = client.post(f"{URL}/plan", json={"gpus": ["H20"]}).json()
    fit = body["expert_fits"][0]
    assert fit["source"] == "fit"
    # one EP size (of EP 8 / EP 4) x 7 token counts; distractors dropped
    assert fit["n_points"] == 7 and fit["group"]["ep_size"] in (4, 8)
    assert fit["group"]["backend"] == "CUTLASS" and fit["used"] and fit["warning"] == ""
    assert len(fit["points"]) == 7 and all(abs(p["residual_ms"]) < 1e-9 for p in fit["points"])
    assert fit["slope_ms"] == pytest.approx(K3, rel=1e-6)
    assert fit["intercept_ms"] == pytest.approx(K4, rel=1e-6)
    assert fit["r2"] == pytest.approx(1.0)
    assert fit["roofline_slope_ms"] != pytest.approx(K3)
    assert body["best"]["expert_fit"] == "fit"
    # Te of the chosen plan follows the fitted law, (x/tpe) * (k3*be + k4), plus TP costs
    best = body["best"]
    law = user_fit(K3, K4)
    expect = expert_node_time_ms(
        law, best["be"], best["experts_per_node"], best["tpe"], model=MODELS[MIX], gpu=GPUS["H20"]
    )
    assert best["te_ms"] == pytest.approx(expect)
    assert best["te_ms"] >= best["experts_per_node"] / best["tpe"] * (K3 * best["be"] + K4)


def test_fit_respects_hardware_label_quant_and_opt_out(client: TestClient, store: Store) -> None:
    ingest_linear(store, hardware="H20")
    # another GPU's sweep with a different law is not used for H20
    ingest_linear(store, hardware="L20", k3=0.02, k4=1.0)
    body = client.post(f"{URL}/plan", json={"gpus": ["H20", "L20"]}).json()
    fits = {f["gpu"]: f for f in body["expert_fits"]}
    assert fits["H20"]["slope_ms"] == pytest.approx(K3)
    assert fits["L20"]["slope_ms"] == pytest.approx(0.02)
    # the fit may read another label's sweeps when told to
    mapped = client.post(
        f"{URL}/plan", json={"gpus": ["A800"], "fit": {"hardware": {"A800": "H20"}}}
    ).json()["expert_fits"][0]
    assert mapped["source"] == "fit" and mapped["hardware_label"] == "H20"
    wrong_quant = client.post(f"{URL}/plan", json={"fit": {"quant": "NVFP4"}}).json()
    assert wrong_quant["expert_fits"][0]["source"] == "roofline"
    assert "0 usable" in wrong_quant["expert_fits"][0]["note"]
    off = client.post(f"{URL}/plan", json={"fit": {"use_stored": False}}).json()
    assert off["expert_fits"][0]["source"] == "roofline"
    own = client.post(
        f"{URL}/plan", json={"expert_fits": {"h20": {"slope_ms": 0.01, "intercept_ms": 0.2}}}
    ).json()
    assert own["expert_fits"][0]["source"] == "user"
    assert own["best"]["expert_fit"] == "user"


def test_overrides_change_the_plan(client: TestClient) -> None:
    base = client.post(f"{URL}/plan", json={}).json()
    cheap = client.post(f"{URL}/plan", json={"gpu_overrides": {"H20": {"price": 0.5}}}).json()
    assert cheap["gpus"][0]["price"] == 0.5
    assert cheap["best"]["cost"] < base["best"]["cost"]
    fewer_layers = client.post(f"{URL}/plan", json={"model_overrides": {"num_layers": 28}})
    body = fewer_layers.json()
    assert body["model"]["num_layers"] == 28 and "edited: num_layers" in body["model"]["source"]
    assert body["request"]["model_overrides"]["num_layers"] == 28


def test_custom_model_and_gpu(client: TestClient) -> None:
    spec = {
        k: getattr(MODELS["mixtral_8x22b"], k)
        for k in (
            "num_experts",
            "top_k",
            "hidden_size",
            "intermediate_size",
            "num_layers",
            "gqa_groups",
            "attention_param_bytes",
            "expert_param_bytes",
        )
    }
    gpu = {
        "memory_gb": 96,
        "bandwidth_gb_s": 4096,
        "bf16_tflops": 148,
        "price": 1.85,
        "power_w": 500,
        "nic_gbps": 200,
        "intra_node_gb_s": 450,
    }
    resp = client.post(
        f"{URL}/plan",
        json={
            "model": "my_moe",
            "model_overrides": spec,
            "gpus": ["MYGPU"],
            "gpu_overrides": {"MYGPU": gpu},
        },
    )
    assert resp.status_code == 200
    body = resp.json()
    assert body["model"]["name"] == "my_moe" and body["model"]["source"] == "user-defined"
    assert body["best"]["attention_gpu"] == "MYGPU"
    same = client.post(f"{URL}/plan", json={}).json()
    assert body["best"]["tput_per_cost"] == pytest.approx(same["best"]["tput_per_cost"])


def test_heterogeneous_mode_pairs_gpus(client: TestClient) -> None:
    body = client.post(
        f"{URL}/plan", json={"gpus": ["H20", "L40S"], "mode": "heterogeneous"}
    ).json()
    pairs = {(a["attention_gpu"], a["expert_gpu"]) for a in body["alternatives"]}
    homo = client.post(f"{URL}/plan", json={"gpus": ["H20", "L40S"]}).json()
    assert all(a["attention_gpu"] == a["expert_gpu"] for a in homo["alternatives"])
    assert body["best"]["tput_per_cost"] >= homo["best"]["tput_per_cost"] - 1e-9
    assert len(pairs) >= 1 and body["mode"] == "heterogeneous"


def test_colocated_shown_when_disaggregation_does_not_pay(client: TestClient) -> None:
    # A small deployment (at most 16 GPUs) is where the paper's gain disappears.
    body = client.post(f"{URL}/plan", json={"options": {"max_gpus": 16}}).json()
    colo, best = body["colocated"], body["best"]
    assert colo is not None and best is not None and best["gpus"] <= 16
    # the paper's baseline: one 8-GPU H20 node holds Mixtral
    assert colo["gpus"] == 8 and colo["gpu"] == "H20"
    assert body["disaggregation_gain"] < 1
    assert body["verdict"].startswith("disaggregation does not pay")


def test_nothing_fits_is_a_200_with_notes(client: TestClient) -> None:
    body = client.post(f"{URL}/plan", json={"workload": {"slo_tbt_ms": 0.01}}).json()
    assert body["best"] is None and body["timeline"] == [] and body["na_sweep"] == []
    assert body["verdict"].startswith("nothing fits (SLO)")
    assert any("no disaggregated plan" in n for n in body["notes"])


def test_get_form_and_download(client: TestClient) -> None:
    resp = client.get(
        f"{URL}/plan",
        params=[
            ("gpu", "H20"),
            ("gpu", "L40S"),
            ("mode", "heterogeneous"),
            ("top", "5"),
            ("download", "true"),
        ],
    )
    assert resp.status_code == 200
    disposition = resp.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="plan-mixtral_8x22b-')
    body = resp.json()
    assert len(body["alternatives"]) == 5
    post = client.post(
        f"{URL}/plan?download=false",
        json={"gpus": ["H20", "L40S"], "mode": "heterogeneous", "top": 5},
    ).json()
    assert post["best"] == body["best"]
    assert "content-disposition" not in client.post(f"{URL}/plan", json={}).headers


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"workload": {"seq_len": 0}}, ["body", "workload", "seq_len"]),
        ({"workload": {"slo_tbt_ms": -1}}, ["body", "workload", "slo_tbt_ms"]),
        ({"options": {"max_micro_batches": 9}}, ["body", "options", "max_micro_batches"]),
        ({"options": {"max_micro_batches": 2}}, ["body", "options", "min_micro_batches"]),
        ({"options": {"max_gpus": 1}}, ["body", "options", "max_gpus"]),
        ({"options": {"near_best_pct": -1}}, ["body", "options", "near_best_pct"]),
        (
            {"expert_fits": {"H20": {"slope_ms": 0, "intercept_ms": 0.1}}},
            ["body", "expert_fits", "H20", "slope_ms"],
        ),
        (
            {"expert_fits": {"H20": {"slope_ms": 0.01, "intercept_ms": -2}}},
            ["body", "expert_fits", "H20", "intercept_ms"],
        ),
        (
            {"attention_fits": [{"gpu": "H20", "tpa": 1, "slope_ms": 0.1, "intercept_ms": 0}]},
            ["body", "attention_fits", 0, "intercept_ms"],
        ),
        ({"gpu_overrides": {"H20": {"price": -1}}}, ["body", "gpu_overrides", "H20", "price"]),
        ({"fit": {"be_min": 10, "be_max": 5}}, ["body", "fit", "be_min"]),
        ({"gpus": []}, ["body", "gpus"]),
        ({"gpus": ["H20", "h20"]}, ["body", "gpus"]),
        ({"mode": "mixed"}, ["body", "mode"]),
        ({"model": "nope"}, ["body", "model"]),
        ({"gpus": ["H20", "NOPE"]}, ["body", "gpus", 1]),
        ({"gpu_overrides": {"L20": {"price": 1}}}, ["body", "gpu_overrides", "L20"]),
        ({"gpu_overrides": {"H20": {"price": 0}}}, ["body", "gpu_overrides", "H20", "price"]),
        ({"model_overrides": {"top_k": 9}}, ["body", "model_overrides", "top_k"]),
        ({"model_overrides": {"wat": 1}}, ["body", "model_overrides", "wat"]),
        ({"options": {"experts_per_node": [3]}}, ["body", "options", "experts_per_node"]),
        (
            {
                "gpus": ["GB300", "B200", "B300", "H200"],
                "mode": "heterogeneous",
                "options": {"max_micro_batches": 8},
            },
            ["body", "gpus"],
        ),
        (
            {
                "gpus": ["H20", "L40S", "A800", "H800"],
                "mode": "heterogeneous",
                "options": {"tp_choices": [1, 2, 3, 4, 5, 6, 7, 8], "max_micro_batches": 8},
            },
            ["body", "options", "tp_choices"],
        ),
        ({"top": 0}, ["body", "top"]),
    ],
)
def test_bad_input_is_422_naming_the_field(
    client: TestClient, body: dict[str, object], loc: list[object]
) -> None:
    resp = client.post(f"{URL}/plan", json=body)
    assert resp.status_code == 422, resp.text
    detail = _detail(resp)
    assert detail["loc"] == loc
    assert detail["msg"] and detail["type"]


@pytest.mark.parametrize(
    ("raw", "loc"),
    [
        (b'{"gpu_overrides": {"H20": {"price": NaN}}}', ["body", "gpu_overrides", "H20", "price"]),
        (b'{"workload": {"seq_len": Infinity}}', ["body", "workload", "seq_len"]),
        (
            b'{"expert_fits": {"H20": {"slope_ms": NaN, "intercept_ms": 0.1}}}',
            ["body", "expert_fits", "H20", "slope_ms"],
        ),
        (
            b'{"model_overrides": {"gqa_groups": -Infinity}}',
            ["body", "model_overrides", "gqa_groups"],
        ),
        (b'{"options": {"balance_tolerance": NaN}}', ["body", "options", "balance_tolerance"]),
    ],
)
def test_non_finite_numbers_are_422_naming_the_field(
    client: TestClient, raw: bytes, loc: list[object]
) -> None:
    resp = client.post(f"{URL}/plan", content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 422, resp.text

    # the error body is strict JSON: the bad input is echoed as a string, not a NaN literal
    def strict(const: str) -> None:
        raise ValueError(const)

    assert json.loads(resp.text, parse_constant=strict)
    assert _detail(resp)["loc"] == loc


def test_gpu_cap_and_near_best_on_the_get_form(client: TestClient) -> None:
    body = client.get(f"{URL}/plan", params={"max_gpus": 20, "near_best_pct": 5}).json()
    assert body["best"]["gpus"] <= 20
    near = body["near_best"]
    assert near["pct"] == 5 and near["gpus_max"] <= 20
    assert near["smallest"]["gpus"] == near["gpus_min"]


def test_heterogeneous_over_many_gpus_allowed_with_pinned_experts_per_node(
    client: TestClient,
) -> None:
    resp = client.post(
        f"{URL}/plan",
        json={
            "gpus": ["H20", "L40S", "A800", "H800", "L20"],
            "mode": "heterogeneous",
            "options": {"experts_per_node": [1]},
            "top": 3,
        },
    )
    assert resp.status_code == 200
    assert resp.json()["best"]["experts_per_node"] == 1


def test_get_form_bad_query_is_422(client: TestClient) -> None:
    resp = client.get(f"{URL}/plan", params={"seq_len": "-5"})
    assert resp.status_code == 422 and _detail(resp)["loc"] == ["query", "seq_len"]
    resp = client.get(f"{URL}/plan", params=[("gpu", "H20"), ("gpu", "h20")])
    assert resp.status_code == 422 and _detail(resp)["loc"] == ["query", "gpu"]
    resp = client.get(f"{URL}/plan", params={"model": "nope"})
    assert resp.status_code == 422 and _detail(resp)["loc"] == ["query", "model"]
    resp = client.get(f"{URL}/plan", params={"seq_len": "nan"})
    assert resp.status_code == 422 and _detail(resp)["loc"] == ["query", "seq_len"]
    resp = client.get(f"{URL}/plan", params={"max_gpus": "1"})
    assert resp.status_code == 422 and _detail(resp)["loc"] == ["query", "max_gpus"]


def test_reads_closed_need_a_token(db_url: str, store: Store) -> None:
    app = create_app(
        Settings(database_url=db_url, enable_dashboard=False, read_requires_token=True), store=store
    )
    with TestClient(app) as c:
        assert c.get(f"{URL}/catalog").status_code == 401
        assert c.post(f"{URL}/plan", json={}).status_code == 401
        token = store.tokens.create_token("reader", ["upload"])[1]
        ok = c.post(f"{URL}/plan", json={}, headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200


def test_export_is_valid_json_without_nan(client: TestClient) -> None:
    text = client.post(f"{URL}/plan", json={"gpus": ["H20", "L40S"], "mode": "heterogeneous"}).text
    assert "NaN" not in text and "Infinity" not in text
    body = json.loads(text)
    assert np.isfinite(body["best"]["throughput"])
