"""The hardware label: inferred from the device name and SM, or given by the uploader
(ingest.hardware)."""

from __future__ import annotations

import pytest

from ingest.errors import InputError
from ingest.hardware import infer_hardware, normalize_hardware_label


@pytest.mark.parametrize(
    ("device", "sm", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", 90, "H100"),
        ("NVIDIA H200", 90, "H200"),
        ("NVIDIA B200", 100, "B200"),
        ("NVIDIA GB200", 100, "GB200"),
        ("NVIDIA GB300", 103, "GB300"),
        ("NVIDIA GB300 NVL72 something", None, "GB300"),
        ("NVIDIA B300 SXM6 AC", 103, "B300"),
        ("NVIDIA GH200 480GB", 90, "GH200"),
        ("NVIDIA H100 80GB HBM3", 100, None),  # name and SM disagree: ambiguous
        ("NVIDIA Graphics Device", 103, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_infer_hardware(device: str | None, sm: int | None, expected: str | None) -> None:
    assert infer_hardware(device, sm, 8) == expected


def test_normalize_hardware_label() -> None:
    assert normalize_hardware_label("gb300") == "GB300"
    assert normalize_hardware_label(" B300 HGX ") == "B300"
    assert normalize_hardware_label("h100 sxm") == "H100"
    assert normalize_hardware_label("mi355x") == "MI355X"
    for bad in ("", "x" * 65, "GB\x00300", "<GB300>", "a/b"):
        with pytest.raises(InputError):
            normalize_hardware_label(bad)
