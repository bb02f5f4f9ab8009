"""service.regressions: each new run against the latest earlier version of its slice,
with thresholds per model / hardware."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from db.store import Store
from ingest.records import Sweep, UploadMeta
from moedash.settings import Settings
from service.frames import DashData
from service.regressions import RegressionThresholds, earlier_version, regressions_for_runs
from tests.factories import sweeps
from tests.factories import version_sweeps as V


def test_new_run_regression_against_the_latest_earlier_version(store: Store) -> None:
    ids = V.seed_versions(store)
    found = regressions_for_runs(store, [ids["rc28"]])
    assert len(found) == 1
    item = found[0]
    assert item["run_id"] == ids["rc28"]
    assert (item["base_version"], item["head_version"]) == (V.RC27, V.RC28)
    assert item["base_run_ids"] == [ids["rc27a"], ids["rc27b"]]
    assert (item["num_tokens"], item["backend"], item["comm"]) == (256, "TRTLLM", V.NVL1)
    assert (item["phase"], item["dispatch"], item["world_size"]) == ("decode", "balanced", 8)
    assert item["base_ms"] == pytest.approx(1.0) and item["head_ms"] == pytest.approx(1.2)
    assert item["change_pct"] == pytest.approx(20.0)
    # rc27's two equal repeats: the noise model's band is narrow and says where it is from
    assert 0 < item["noise_pct"] < 5.0 and item["noise_source"] == "repeats"
    assert item["baseline_runs"] == 2 and item["baseline_change_pct"] == pytest.approx(20.0)
    assert item["threshold_pct"] == 5.0 and item["verdict"] == "regression"


def test_no_earlier_version_no_regressions(store: Store) -> None:
    ids = V.seed_versions(store)
    # rc9 is the oldest; rc27's repeats match rc9 within threshold/noise
    assert regressions_for_runs(store, [ids["rc9"], ids["rc27a"], ids["rc27b"]]) == []
    assert regressions_for_runs(store, [9999]) == []
    assert regressions_for_runs(store, []) == []


def test_earlier_means_by_version_number_not_upload_order(store: Store) -> None:
    ids = V.seed_versions(store, ("rc28", "rc9"))  # rc28 stored first
    found = regressions_for_runs(DashData(store), [ids["rc28"]])
    # against rc9 alone, CUTEDSL at 4096 tokens (2.20 -> 2.33 ms, band 1.41 %) counts too
    assert [(f["base_version"], f["num_tokens"]) for f in found] == [(V.RC9, 256), (V.RC9, 4096)]
    assert earlier_version(store.list_runs().items, V.RC9) is None


def test_new_failures_on_request(store: Store) -> None:
    ids = V.seed_versions(store)
    found = regressions_for_runs(store, [ids["rc28"]], verdicts=("regression", "new_failure"))
    assert sorted(f["verdict"] for f in found) == ["new_failure", "regression"]


def test_other_slices_are_not_compared(store: Store) -> None:
    ids = V.seed_versions(store, ("rc27a",))
    other = sweeps.make_sweep(
        model=V.MODEL, hardware="H100", quant=V.QUANT, world_size=8, trtllm_version=V.RC28
    )
    res = store.ingest([other], b"other-cell", UploadMeta(hardware="H100", filename="h.json"))
    assert ids and regressions_for_runs(store, [res.runs[0].run_id]) == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, 1),
        # the prefill +2.5 % passes 1 % but not the noise band of two runs: inconclusive
        ({"*/GB300": 1.0}, 1),
        ({"*/GB300": 1.0, "deepseek_v4_pro": 25.0}, 0),  # model beats */hardware
        ({"deepseek_v4_pro/gb300": 1.0, "deepseek_v4_pro": 25.0}, 1),  # model/hw beats model
        ({"other_model": 1.0}, 1),
    ],
)
def test_thresholds_per_model_and_hardware(
    store: Store, overrides: dict[str, float], expected: int
) -> None:
    ids = V.seed_versions(store)
    thresholds = RegressionThresholds(overrides=overrides)
    assert len(regressions_for_runs(store, [ids["rc28"]], thresholds)) == expected


def test_threshold_lookup_and_validation() -> None:
    t = RegressionThresholds(default_pct=4, overrides={"m": 3, "m/gb300": 2, "*/h100": 8})
    assert t.for_slice("m", "GB300") == 2.0
    assert t.for_slice("m", "B200") == 3.0
    assert t.for_slice("x", "h100") == 8.0
    assert t.for_slice("x", "B200") == 4.0
    for bad in ({"a/b/c": 1.0}, {"*": 1.0}, {"m": -1.0}, {"m": float("nan")}, {"/x": 2.0}):
        with pytest.raises(ValidationError):
            RegressionThresholds(overrides=bad)
    with pytest.raises(ValidationError):
        RegressionThresholds(default_pct=-1)


def test_thresholds_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "MOEDASH_REGRESSION_THRESHOLDS", '{"default_pct": 7, "overrides": {"*/GB300": 3}}'
    )
    got = Settings().regression_thresholds
    assert got.default_pct == 7.0 and got.for_slice("any", "gb300") == 3.0
    monkeypatch.setenv("MOEDASH_REGRESSION_THRESHOLDS", '{"default_pct": "lots"}')
    with pytest.raises(ValidationError):
        Settings()


def test_each_phase_uses_the_latest_version_that_measured_it(store: Store) -> None:
    # rc27 measured prefill only: decode rows of rc28 compare with rc9, prefill with rc27
    sweeps_ = V.version_sweeps()
    ids = {}
    for name, sweep in (("rc9", sweeps_[0]), ("rc27a", sweeps_[1]), ("rc28", sweeps_[3])):
        if name == "rc27a":
            cand = sweep.candidates
            sweep = Sweep(key="", run=sweep.run, candidates=cand[~cand["cuda_graph"].astype(bool)])
        res = store.ingest([sweep], name.encode(), UploadMeta(hardware=V.HARDWARE))
        ids[name] = res.runs[0].run_id
    found = regressions_for_runs(store, [ids["rc28"]], RegressionThresholds(default_pct=1.0))
    got = sorted((f["num_tokens"], f["phase"], f["base_version"]) for f in found)
    assert got == [(256, "decode", V.RC9), (4096, "decode", V.RC9), (16384, "prefill", V.RC27)]
    assert {tuple(f["base_run_ids"]) for f in found if f["phase"] == "prefill"} == {(ids["rc27a"],)}
