"""Tests of service/: the one read path, and parity between API and pages."""
