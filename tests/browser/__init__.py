"""Tests that drive real headless Chromium against a served app."""
