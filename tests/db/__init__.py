"""Tests of db/: the store on real DuckDB files (and PostgreSQL with -m postgres)."""
