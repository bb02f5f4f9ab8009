"""ingest.serving_configs on the hand-written mini data dir tests/fixtures/serving/."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis import crossval_columns as cc
from ingest.serving_configs import import_directory, points_frame
from ingest.serving_matrix import expand_concurrency, hardware_from_runner, load_matrix
from ingest.serving_recipes import (
    IX,
    IX_OLD,
    SS,
    SS_MAIN,
    RecipeRoots,
    ResolvedRecipe,
    Unresolved,
    apply_override,
    deep_merge,
    resolve_recipe,
    split_selector,
    zip_variant,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "serving"
MASTER = FIXTURE / "inferencex" / "configs" / "nvidia-master.yaml"


@pytest.fixture
def roots() -> RecipeRoots:
    return RecipeRoots.under(FIXTURE)


# --------------------------------------------------------------------------- matrix
def test_load_matrix_counts_and_fields() -> None:
    pts = load_matrix(MASTER.read_text(), "inferencex/configs/nvidia-master.yaml")
    # h200: conc [8, 64] -> 2; gb200: 300..1200 doubling -> 3, plus [4] -> 1;
    # kimi: 4 rows x 1; sglang: 2; single-node trt: 4..8 doubling -> 2.  Total 14.
    assert len(pts) == 14
    assert [p.conc for p in pts if p.entry == "dsr1-fp4-gb200-dynamo-trt"] == [300, 600, 1200, 4]
    h200 = pts[0]
    assert (h200.hardware, h200.isl, h200.osl, h200.spec_decoding) == ("H200", 8192, 1024, "mtp")
    assert h200.prefill is not None and h200.decode is not None
    assert (h200.decode.num_workers, h200.decode.tp, h200.decode.ep) == (6, 8, 8)
    assert h200.config_file == "recipes/trtllm/h200/8k1k/mtp/c_ctx1_gen6_tep8_mtp3.yaml"
    single = [p for p in pts if p.framework == "trt"]
    assert [p.conc for p in single] == [4, 8]
    assert single[0].prefill is None and single[0].single is not None
    assert single[0].config_file is None


def test_point_ids_are_stable_and_distinct() -> None:
    a = load_matrix(MASTER.read_text(), "m.yaml")
    b = load_matrix(MASTER.read_text(), "m.yaml")
    assert [p.point_id for p in a] == [p.point_id for p in b]
    assert len({p.point_id for p in a}) == len(a)


def test_load_matrix_names_entry_on_missing_key() -> None:
    with pytest.raises(ValueError, match="entry 'x'.*'precision'"):
        load_matrix("x: {model: m, model-prefix: p, runner: h200, framework: trt}", "s")


@pytest.mark.parametrize(
    ("runner", "hw"),
    [("cluster:gb300-nv", "GB300"), ("h200-multinode", "H200"), ("b200", "B200")],
)
def test_hardware_from_runner(runner: str, hw: str) -> None:
    assert hardware_from_runner(runner) == hw


def test_expand_concurrency() -> None:
    assert expand_concurrency({"conc-start": 4, "conc-end": 64}) == [4, 8, 16, 32, 64]
    assert expand_concurrency({"conc-start": 300, "conc-end": 1200}) == [300, 600, 1200]
    assert expand_concurrency({"conc-list": [5, 1]}) == [5, 1]
    with pytest.raises(ValueError, match="conc-start/conc-end"):
        expand_concurrency({"conc-start": 8, "conc-end": 4})


# --------------------------------------------------------------------------- overrides
def test_split_selector() -> None:
    assert split_selector("recipes/a.yaml:zip_override_x[2]") == (
        "recipes/a.yaml",
        "zip_override_x[2]",
    )
    assert split_selector("recipes/a.yaml") == ("recipes/a.yaml", None)


def test_deep_merge_rules() -> None:
    base = {"a": {"x": 1, "y": 2}, "l": [1, 2, 3], "s": 1, "gone": 5}
    out = deep_merge(base, {"a": {"y": 3}, "l": [9], "s": 2, "gone": None, "new": 1})
    assert out == {"a": {"x": 1, "y": 3}, "l": [9], "s": 2, "new": 1}
    assert base["a"] == {"x": 1, "y": 2}  # input untouched


def test_zip_variant_rules() -> None:
    sec = {"n": ["a", "b"], "k": {"tp": [4, 8], "m": [0.8]}, "c": [[4, 8], [4]], "t": True}
    assert zip_variant(sec, 0) == {"n": "a", "k": {"tp": 4, "m": 0.8}, "c": [4, 8], "t": True}
    assert zip_variant(sec, 1) == {"n": "b", "k": {"tp": 8, "m": 0.8}, "c": [4], "t": True}
    with pytest.raises(ValueError, match="out of range"):
        zip_variant(sec, 2)
    with pytest.raises(ValueError, match="incompatible list lengths"):
        zip_variant({"a": [1, 2], "b": [1, 2, 3]}, 0)


def test_apply_override_selectors() -> None:
    doc = {
        "base": {"x": {"a": 1, "b": 2}},
        "override_o": {"x": {"b": None, "c": 3}},
        "zip_override_z": {"x": {"a": [10, 20]}},
    }
    assert apply_override(doc, "base") == {"x": {"a": 1, "b": 2}}
    assert apply_override(doc, "override_o") == {"x": {"a": 1, "c": 3}}
    assert apply_override(doc, "zip_override_z[1]") == {"x": {"a": 20, "b": 2}}
    with pytest.raises(ValueError, match="needs a selector"):
        apply_override(doc, None)
    with pytest.raises(ValueError, match="no section"):
        apply_override(doc, "zip_override_missing[0]")
    with pytest.raises(ValueError, match="no such section"):
        apply_override(doc, "override_missing")
    with pytest.raises(ValueError, match="no 'base' key"):
        apply_override({"name": "plain"}, "override_o")
    assert apply_override({"name": "plain"}, None) == {"name": "plain"}


# --------------------------------------------------------------------------- resolution
def test_ix_overlay_wins_over_srt_slurm_clone(roots: RecipeRoots) -> None:
    # Same path in SS (backend TRTLLM) and the IX overlay (CUTEDSL): cp -rT -> IX.
    r = resolve_recipe("recipes/trtllm/gb200-fp4/8k1k/stp/ctx3_gen1_dep16.yaml", roots)
    assert isinstance(r, ResolvedRecipe) and r.root == IX
    assert r.config["backend"]["trtllm_config"]["decode"]["moe_config"]["backend"] == "CUTEDSL"


def test_resolution_sources(roots: RecipeRoots) -> None:
    kimi = resolve_recipe("recipes/trtllm/kimi-k25-nvfp4/b200-fp4/disagg-1p1d-tep8.yaml", roots)
    assert isinstance(kimi, ResolvedRecipe) and kimi.root == IX
    assert kimi.path.endswith(
        "trtllm/kimi-k2.5/disagg/trtllm_dynamo/b200-fp4/disagg-1p1d-tep8.yaml"
    )
    main = resolve_recipe("recipes/trtllm/b300-fp8/ctx1_gen1_dtp8.yaml", roots)
    assert isinstance(main, ResolvedRecipe) and main.root == SS_MAIN
    old = resolve_recipe("recipes/vllm/old/only-old.yaml", roots)
    assert isinstance(old, ResolvedRecipe) and old.root == IX_OLD
    h200 = resolve_recipe("recipes/trtllm/h200/8k1k/mtp/c_ctx1_gen6_tep8_mtp3.yaml", roots)
    assert isinstance(h200, ResolvedRecipe) and h200.root == SS
    missing = resolve_recipe("recipes/trtllm/nope.yaml", roots)
    assert isinstance(missing, Unresolved) and "not found in any source" in missing.reason
    assert "SS-main:recipes/trtllm/nope.yaml" in missing.reason
    bad = resolve_recipe("recipes/gb300-fp4/kimi.yaml", roots)  # override file, no selector
    assert isinstance(bad, Unresolved) and "needs a selector" in bad.reason


def test_override_variants_resolve(roots: RecipeRoots) -> None:
    low = resolve_recipe("recipes/gb300-fp4/kimi.yaml:override_lowlat", roots)
    assert isinstance(low, ResolvedRecipe)
    dec = low.config["backend"]["trtllm_config"]["decode"]
    # null deleted enable_attention_dp; the list replaced; base keys kept.
    assert "enable_attention_dp" not in dec
    assert dec["cuda_graph_config"]["batch_sizes"] == [1, 2, 4]
    assert (dec["tensor_parallel_size"], dec["max_batch_size"]) == (8, 32)
    z1 = resolve_recipe("recipes/gb300-fp4/kimi.yaml:zip_override_scale[1]", roots)
    assert isinstance(z1, ResolvedRecipe)
    assert z1.config["name"] == "mini-kimi-4d"
    assert z1.config["resources"]["decode_workers"] == 4
    d1 = z1.config["backend"]["trtllm_config"]["decode"]
    assert d1["max_batch_size"] == 16
    assert d1["cuda_graph_config"]["batch_sizes"] == [1, 2, 4, 8, 16]
    assert d1["moe_config"]["backend"] == "TRTLLM"  # broadcast from [TRTLLM]
    assert d1["enable_attention_dp"] is True  # from base
    z0 = resolve_recipe("recipes/gb300-fp4/kimi.yaml:zip_override_scale[0]", roots)
    assert isinstance(z0, ResolvedRecipe) and z0.content_hash != z1.content_hash
    z9 = resolve_recipe("recipes/gb300-fp4/kimi.yaml:zip_override_scale[9]", roots)
    assert isinstance(z9, Unresolved) and "out of range" in z9.reason


# --------------------------------------------------------------------------- directory
def test_import_directory_counts() -> None:
    r = import_directory(FIXTURE)
    # 14 current + 2 deprecated points; 10 distinct CONFIG_FILEs, 1 missing.
    assert len(r.points) == 16
    assert len(r.recipes) == 9
    assert list(r.unresolved) == ["recipes/trtllm/gb200-fp4/8k1k/stp/does_not_exist.yaml"]
    roots = sorted(x.root for x in r.recipes.values())
    assert roots == sorted([SS, IX, SS, SS, SS, IX, SS, IX_OLD, SS_MAIN])


def test_ix_old_only_resolves_for_deprecated_points() -> None:
    r = import_directory(FIXTURE)
    old = [p for p in r.points if p.config_file == "recipes/vllm/old/only-old.yaml"]
    by_era = {p.is_current: r.resolution(p) for p in old}
    assert isinstance(by_era[False], ResolvedRecipe)
    assert isinstance(by_era[True], Unresolved)
    assert "deleted at InferenceX HEAD" in by_era[True].reason


def test_import_is_idempotent_and_hash_tracks_content(tmp_path: Path) -> None:
    a, b = import_directory(FIXTURE), import_directory(FIXTURE)
    assert a.content_hash == b.content_hash
    assert {k: v.content_hash for k, v in a.recipes.items()} == {
        k: v.content_hash for k, v in b.recipes.items()
    }
    copy = tmp_path / "data"
    shutil.copytree(FIXTURE, copy)
    recipe = copy / "srt-slurm/sa-submission-q2-2026/recipes/sglang/dsr1.yaml"
    recipe.write_text(recipe.read_text().replace("64", "128"))
    c = import_directory(copy)
    assert c.content_hash != a.content_hash
    changed = [k for k in a.recipes if a.recipes[k].content_hash != c.recipes[k].content_hash]
    assert changed == ["recipes/sglang/dsr1.yaml"]


def test_points_frame_columns_and_reasons() -> None:
    r = import_directory(FIXTURE)
    df = points_frame(r)
    assert tuple(df.columns) == cc.POINT_COLUMNS
    assert len(df) == 16
    single = df[df[cc.FRAMEWORK] == "trt"]
    assert single[cc.RECIPE_UNRESOLVED_REASON].str.startswith("single-node lane").all()
    # single-node layout is copied into both phases' columns
    assert single["decode_tp"].tolist() == [8, 8] and single["prefill_ep"].tolist() == [8, 8]
    resolved = df[df[cc.RECIPE_PATH].notna()]
    assert resolved[cc.RECIPE_UNRESOLVED_REASON].isna().all()
