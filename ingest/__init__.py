"""Bytes → records: detection, bench_moe, NVIDIA dashboard, legacy, serving configs, upload metadata."""  # noqa: E501
