"""The deterministic synthetic demo dataset, written as bench_moe JSON bytes."""
