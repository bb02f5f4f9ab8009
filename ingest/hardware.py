"""System labels (GB300, B300, H200, ...): inference from a GPU name, and validation of
labels given by a person.

bench_moe records only rank 0's ``torch.cuda.get_device_properties().name`` (e.g.
"NVIDIA B200") and the SM version; the *system* (GB300 NVL72 vs B300 HGX) is in the GPU
name for every current part, because the Grace-coupled parts report "NVIDIA GB200" /
"NVIDIA GB300". Anything we cannot place with certainty yields None, and the uploader
must say ``hardware=...``.
"""

from __future__ import annotations

import re

from ingest.errors import InputError

# Labels we know, with the SM (compute capability x10) each reports.
KNOWN_HARDWARE: dict[str, frozenset[int]] = {
    "GB300": frozenset({103}),
    "GB200": frozenset({100}),
    "B300": frozenset({103}),
    "B200": frozenset({100}),
    "B100": frozenset({100}),
    "GH200": frozenset({90}),
    "H200": frozenset({90}),
    "H100": frozenset({90}),
    "H800": frozenset({90}),
    "H20": frozenset({90}),
    "A100": frozenset({80}),
    "L40S": frozenset({89}),
    "RTX_PRO_6000": frozenset({120}),
}

# Checked in order: Grace parts before the bare GPU names they contain.
_NAME_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), label)
    for pattern, label in (
        (r"\bGB300\b", "GB300"),
        (r"\bGB200\b", "GB200"),
        (r"\bGH200\b", "GH200"),
        (r"\bB300\b", "B300"),
        (r"\bB200\b", "B200"),
        (r"\bB100\b", "B100"),
        (r"\bH200\b", "H200"),
        (r"\bH100\b", "H100"),
        (r"\bH800\b", "H800"),
        (r"\bH20\b", "H20"),
        (r"\bA100\b", "A100"),
        (r"\bL40S\b", "L40S"),
        (r"\bRTX PRO 6000\b", "RTX_PRO_6000"),
    )
)

# Suffixes people add to a system label that do not change the system key.
_LABEL_SUFFIXES = re.compile(r"[ _-]+(NVL\d+|HGX|SXM\d*|PCIE|NVL|DGX)$")
_LABEL_CHARS = re.compile(r"^[A-Z0-9 _.+-]+$")
_LABEL_OK = re.compile(r"^[A-Z0-9][A-Z0-9_.+-]*$")
MAX_LABEL_LENGTH = 64


def infer_hardware(
    device_name: str | None, sm: int | None = None, world_size_per_node: int | None = None
) -> str | None:
    """The system label for a GPU name, or None when it is unknown or ambiguous.

    A name that matches two different labels, or whose label contradicts ``sm`` (when
    given), is ambiguous. ``world_size_per_node`` is accepted for the same reason the
    report records it, but no current rule needs it: the GPU name alone separates the
    NVL72 parts (GB200/GB300) from the HGX ones (B200/B300).
    """
    del world_size_per_node  # see docstring
    if not isinstance(device_name, str) or not device_name.strip():
        return None
    name = " ".join(device_name.upper().split())
    matches: list[str] = []
    for pattern, label in _NAME_PATTERNS:
        if pattern.search(name) and not any(label in m for m in matches):
            matches.append(label)
    if len(matches) != 1:
        return None
    label = matches[0]
    if isinstance(sm, int) and not isinstance(sm, bool) and sm not in KNOWN_HARDWARE[label]:
        return None
    return label


def normalize_hardware_label(label: str, field: str = "hardware") -> str:
    """Validate and canonicalise a user-given system label.

    A label naming exactly one known GPU comes back as that key ("GB300 NVL72" →
    "GB300", "nvidia h100 80gb hbm3" → "H100"). Other labels are upper-cased, stripped
    of form-factor suffixes (NVL72, HGX, SXM, PCIe) and accepted when short and made of
    letters, digits and ``_.+-`` (spaces become "_"). Raises InputError(field, ..., 422) otherwise.
    """
    if not isinstance(label, str):
        raise InputError(field, f"expected a string, got {type(label).__name__}", 422)
    if len(label) > MAX_LABEL_LENGTH:
        raise InputError(field, f"longer than {MAX_LABEL_LENGTH} characters", 422)
    if any(ord(c) < 32 or ord(c) == 127 for c in label):
        raise InputError(field, "contains control characters", 422)
    text = " ".join(label.upper().split())
    if not _LABEL_CHARS.match(text):
        raise InputError(
            field,
            f"'{label}' is not a system label (use e.g. GB300, B300, H200; letters, digits, _.+-)",
            422,
        )
    if text.startswith("NVIDIA "):
        text = text[len("NVIDIA ") :]
    inferred = infer_hardware(text)
    if inferred is not None:
        return inferred
    text = _LABEL_SUFFIXES.sub("", text).replace(" ", "_")
    if not text or not _LABEL_OK.match(text):
        raise InputError(
            field,
            f"'{label}' is not a system label (use e.g. GB300, B300, H200; letters, digits, _.+-)",
            422,
        )
    return text
