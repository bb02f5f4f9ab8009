"""analysis.predict_command: the bench_moe command measuring a model given by its shape."""

from __future__ import annotations

import shlex

from analysis.crossval_sweeps import BENCH_MOE_FLAGS
from analysis.predict_command import CUSTOM_ROUTING, shape_command


def _flags(command: str) -> dict[str, list[str]]:
    words = shlex.split(command.split("python3 -m bench_moe", 1)[1])
    out: dict[str, list[str]] = {}
    for word in words:
        if word.startswith("--"):
            key = word
            out[key] = []
        else:
            out[key].append(word)
    return out


def test_a_shape_no_preset_has_is_passed_by_its_flags_with_a_routing_method() -> None:
    got = shape_command("B300", "NVFP4", (512, 10, 4096, 1024), 8, 300, True, True)
    flags = _flags(got.command)
    assert got.preset is None and "--model" not in flags
    assert set(flags) <= BENCH_MOE_FLAGS  # only flags bench_moe documents
    assert flags["--num_experts"] == ["512"] and flags["--top_k"] == ["10"]
    assert flags["--hidden_size"] == ["4096"] and flags["--intermediate_size"] == ["1024"]
    assert flags["--routing_method"] == [CUSTOM_ROUTING]  # required for a custom shape
    assert flags["--world_size"] == ["8"] and flags["--quant"] == ["NVFP4"]
    assert flags["--balanced_total_num_tokens"] == ["300"]
    assert flags["--parallel_mode"][0] == "DEP"  # attention DP family
    assert "--no_cuda_graph" not in flags and "--use_low_precision_moe_combine" in flags
    assert got.model_args in got.command


def test_a_preset_shape_uses_the_preset_and_prefill_turns_cuda_graph_off() -> None:
    got = shape_command("GB300", "W4A8_MXFP4_MXFP8", (256, 8, 6144, 2048), 4, 9000, False, False)
    flags = _flags(got.command)
    assert got.preset == "glm_5" and flags["--model"] == ["glm_5"]
    assert "--num_experts" not in flags and "--routing_method" not in flags
    assert flags["--parallel_mode"][0] == "TEP" and "--no_cuda_graph" in flags
    assert "-np 4" in got.command  # one node's launcher
