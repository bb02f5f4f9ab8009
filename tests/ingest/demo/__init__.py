"""Tests of the synthetic bench_moe generator (ingest.demo)."""
