"""Tests of api/: the real ASGI app over HTTP."""
