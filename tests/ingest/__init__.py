"""Tests of ingest/: parsers, detection, serving configs, the demo generator."""
