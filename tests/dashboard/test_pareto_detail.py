"""The Pareto click-through without a browser: the figure's hover and customdata, the
decoded click, the detail panel and its downloads (the browser test clicks for real)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml

from analysis import columns as C
from dashboard import figures as F
from dashboard.app import create_dash
from dashboard.pages import pareto
from db.store import Store
from service.frames import Cell, DashData, prepare_frame
from service.point_export import point_export
from tests import factories
from tests.factories.dashboard import seed_store, walk
from tests.factories.exports import CELL, seed_awkward_exports

KNOWN = Cell("deepseek_v4_pro", "GB300", "NVFP4")


@pytest.fixture(scope="module")
def seeded(module_store: Store) -> tuple[DashData, dict[str, int]]:
    return DashData(module_store, version_ttl=0.0), seed_store(module_store)


def _cloud() -> Any:
    rows = [
        {C.CANDIDATE_INDEX: 0, C.NUM_TOKENS: 256, C.SCORE_MS: 1.0},
        {C.CANDIDATE_INDEX: 1, C.NUM_TOKENS: 1024, C.SCORE_MS: 2.0, C.DISPATCH: "recv_hotspot"},
        {C.CANDIDATE_INDEX: 2, C.NUM_TOKENS: 64, C.SCORE_MS: 0.5, C.PARALLEL_MODE: "TEP"},
    ]
    frame = prepare_frame(factories.make_candidates(rows))
    return frame.assign(**{F.KEY: np.arange(len(frame))})


def test_hover_names_num_tokens_world_size_attention_and_routing() -> None:
    cloud = _cloud()
    fig = F.pareto_figure(cloud, cloud.iloc[[0]], C.SCORE_MS, C.TOKENS_PER_S_PER_GPU)
    hovers = [t.hovertemplate for t in fig.data if t.type == "scattergl"]
    # one trace per recipe x world size x attention x routing: the 2 points off the
    # frontier, 2 traces (the frontier's point is drawn, and hovered, by its own trace)
    assert len(hovers) == 2
    assert all("num_tokens: %{customdata[2]:.0f} tokens" in h for h in hovers)
    assert any("world size 8 GPUs · attention DP · routing recv_hotspot" in h for h in hovers)
    assert any("attention TP" in h for h in hovers)
    front = [t for t in fig.data if t.type == "scatter"][0]
    assert "routing balanced" in front.text[0] and "num_tokens" in front.hovertemplate
    for t in fig.data:  # [key, third metric, num_tokens] per point
        assert np.asarray(t.customdata).shape[1] == 3
    keyed = {int(k): int(n) for t in fig.data for k, _, n in np.asarray(t.customdata)}
    assert keyed == {0: 256, 1: 1024, 2: 64}


def test_coarse_cloud_still_names_the_workload_per_trace() -> None:
    rows = [
        {C.CANDIDATE_INDEX: i, C.NUM_TOKENS: 256, C.SCORE_MS: 1.0 + i, C.MOE_EP_SIZE: i + 1}
        for i in range(F.MAX_CLOUD_TRACES + 5)
    ]
    frame = prepare_frame(factories.make_candidates(rows))
    cloud = frame.assign(**{F.KEY: np.arange(len(frame))})
    fig = F.pareto_figure(cloud, cloud.iloc[:0], C.SCORE_MS, C.TOKENS_PER_S_PER_GPU)
    (trace,) = fig.data  # one backend, one world size, attention, routing
    assert "(recipe on click)" in trace.hovertemplate
    assert "routing balanced" in trace.hovertemplate


def test_a_decoded_click_resolves_the_point_with_integral_float_keys(seeded: tuple) -> None:
    data, ids = seeded
    frame = data.cell_frame(KNOWN)
    key = int(frame.index[frame[C.CANDIDATE_INDEX] == 3][0])
    # what the clientside decoder sends for a float32 typed array row
    click = {
        "points": [{"curveNumber": 0, "pointNumber": 1, "customdata": [float(key), 768.0, 1024.0]}]
    }
    assert pareto.point_from_click(data, KNOWN.key, click) == f"{ids['known']}:3"
    for bad in ([0.5], ["x"], [True], [], None, {"0": key}):
        assert pareto.point_from_click(data, KNOWN.key, {"points": [{"customdata": bad}]}) is None
    assert pareto.point_from_click(data, KNOWN.key, None) is None


def test_the_click_goes_through_the_clientside_decoder(seeded: tuple) -> None:
    data, _ = seeded
    app = create_dash(data)
    decoder = next(v for k, v in app.callback_map.items() if k == "pareto-click.data")
    assert [i["id"] for i in decoder["inputs"]] == ["pareto-graph"]
    assert [s["property"] for s in decoder["state"]] == ["figure"]
    server = next(v for k, v in app.callback_map.items() if k == "pareto-point.data")
    assert server["inputs"] == [{"id": "pareto-click", "property": "data"}]
    assert "bdata" in pareto.CLICKED_POINT_JS and "atob" in pareto.CLICKED_POINT_JS


def test_detail_panel_and_downloads_hold_the_api_export(seeded: tuple) -> None:
    data, ids = seeded
    point = f"{ids['known']}:2"
    detail = pareto.render_detail(data, KNOWN.key, point)
    shown = [c for c in walk(detail) if isinstance(c, str)]
    for text in ("DP", "balanced", "on", "NVLINK_ONE_SIDED"):
        assert text in shown
    api = point_export(data, ids["known"], 2)
    y = pareto.download_yaml(data, KNOWN.key, point)
    env = pareto.download_env(data, KNOWN.key, point)
    assert y is not None and env is not None
    assert (y["content"], y["filename"]) == (api.yaml, api.yaml_filename)
    assert (env["content"], env["filename"]) == (api.env, api.env_filename)
    assert yaml.safe_load(y["content"])["moe_config"]["backend"] == "TRTLLM"
    assert pareto.download_env(data, KNOWN.key, "999:9") is None
    assert pareto.download_yaml(data, None, point) is None


def test_a_foreign_backend_shows_the_reason_instead_of_a_download(store: Store) -> None:
    run = seed_awkward_exports(store)
    data = DashData(store, version_ttl=0.0)
    detail = pareto.render_detail(data, CELL.key, f"{run}:0")
    reason = next(
        c for c in walk(detail) if getattr(c, "data-testid", None) == "pareto-not-deployable"
    )
    assert "TORCH_BMM_PADDED" in " ".join(c for c in walk(reason) if isinstance(c, str))
    ids = {getattr(c, "id", None) for c in walk(detail)}
    assert "pareto-download-btn" not in ids and "pareto-yaml" not in ids
    assert pareto.download_yaml(data, CELL.key, f"{run}:0") is None
    warned = pareto.render_detail(data, CELL.key, f"{run}:1")
    shown = " ".join(c for c in walk(warned) if isinstance(c, str))
    assert "outside the guide's coverage" in shown
    assert "pareto-download-btn" in {getattr(c, "id", None) for c in walk(warned)}
