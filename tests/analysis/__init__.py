"""Tests of analysis/: hand-built frames with known answers, property tests."""
