"""What identifies a sweep's measurements and how its bytes are kept: the content
fingerprint that maps the same measurements in other bytes to one run, and the zstd
compression of stored uploads. Used by the prepared upload (db.prepared, in a parse
worker) and by the write path (db.uploads); neither imports the other for these.
"""

from __future__ import annotations

import hashlib
import json

import zstandard

from analysis import columns as C
from db.dialects import plain_scalar as _plain
from db.fingerprint import candidate_hashes
from ingest.records import Sweep

# Run facts that identify what was measured; upload annotations (notes, CI URL,
# filename) do not change the identity of a run.
_IDENTITY_RUN_KEYS = (
    C.SOURCE_FORMAT,
    C.MODEL,
    C.NUM_EXPERTS,
    C.TOP_K,
    C.HIDDEN_SIZE,
    C.INTERMEDIATE_SIZE,
    C.QUANT,
    C.HARDWARE,
    C.WORLD_SIZE,
    C.TRTLLM_VERSION,
    C.TRTLLM_COMMIT,
    "device_name",
    "environment_json",
    "model_json",
)


def sweep_fingerprint(sweep: Sweep) -> str:
    """Content identity of a sweep: SHA-256 over its identifying run facts and its
    candidates with canonical dtypes, so the same measurements arriving in different
    bytes (NVIDIA's data.js and its CSVs, a re-serialised report) map to one run."""
    digest = hashlib.sha256()
    facts = {k: _plain(sweep.run.get(k)) for k in _IDENTITY_RUN_KEYS}
    digest.update(json.dumps(facts, sort_keys=True, default=str).encode())
    # the candidates' hashes, per column (db.fingerprint: same bytes as hashing each
    # column with pandas in its canonical dtype, ~20x cheaper)
    for name, hashed in candidate_hashes(sweep.candidates):
        digest.update(name.encode())
        digest.update(hashed)
    return digest.hexdigest()


_COMPRESS_CHUNK = 16 << 20


def compress(raw: bytes) -> bytes:
    """``raw`` as one zstd frame (level 3), compressed in 16 MiB pieces. The one-shot
    ``ZstdCompressor.compress`` first allocates an output buffer as large as the input
    (zstd's worst-case bound), which for a 500 MB upload is another 500 MB of RSS; the
    streaming compressor grows its output only as far as the compressed size."""
    compressor = zstandard.ZstdCompressor(level=3).compressobj(size=len(raw))
    view = memoryview(raw)
    parts = [
        compressor.compress(view[i : i + _COMPRESS_CHUNK])
        for i in range(0, len(raw), _COMPRESS_CHUNK)
    ]
    parts.append(compressor.flush())
    return b"".join(parts)
