"""Tests of the composition root: CLI, upload client, several processes, packaging."""
