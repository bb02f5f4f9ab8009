"""The moedash test suite; folders mirror the source tree."""
