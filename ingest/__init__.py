"""Bytes → records: format detection, the bench_moe parser, NVIDIA dashboard data, legacy formats, serving configs and the one upload-metadata model."""
