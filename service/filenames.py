"""File names as pages show them: relative, never a path on the server.

The store keeps an upload's file name as the client gave it; the CLI gives the path it
was called with (``/home/ci/out/x.json``, ``../shared/data/.../data.js``), which says
where files live on the machine that ingested them. Pages show only the part that
names the file.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# A dashboard CSV's identity is its last three parts: <model>/<precision>/<hardware>.csv
_CSV_PARTS = 3


def display_filename(name: object) -> str | None:
    """``name`` without its directories: the base name, or for a ``.csv`` the last three
    parts (``model/precision/hardware.csv``, the dashboard CSV's identity). Backslashes
    count as separators and ``.``/``..`` parts are dropped, so no absolute or parent
    path is left. None, NaN (a frame's missing value) or an empty name: None."""
    if not isinstance(name, str) or not name:
        return None
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("/", ".", "..")]
    parts = [p for p in parts if not (len(p) == 2 and p[1] == ":")]  # C: drive letters
    if not parts:
        return None
    keep = _CSV_PARTS if parts[-1].lower().endswith(".csv") else 1
    return "/".join(parts[-keep:])


def file_part(value: object) -> str:
    """A file-name-safe piece of ``value`` (anything but letters, digits, ``._-`` -> _),
    so stored text (model names come from uploads) cannot break a download header."""
    return _UNSAFE.sub("_", str(value)).strip("_") or "x"


def config_stem(
    model: object,
    hardware: object,
    quant: object,
    world_size: int,
    num_tokens: int,
    *,
    which: str,
    phase: str | None = None,
) -> str:
    """The one name of an exported MoE config, whichever page or route writes it:
    ``moe_config_<model>_<gpu>_<quant>_ws<N>[_<phase>]_<tokens>tok_<which>``, where
    ``which`` says whose config it is (``tree``, ``measured``, ``run<R>_cand<I>``)."""
    parts = [file_part(model), file_part(hardware), file_part(quant), f"ws{int(world_size)}"]
    if phase:
        parts.append(file_part(phase))
    parts += [f"{int(num_tokens)}tok", file_part(which)]
    return "moe_config_" + "_".join(parts)
