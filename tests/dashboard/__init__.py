"""Tests of dashboard/: layouts, callbacks and figures without a browser."""
