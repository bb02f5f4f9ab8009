"""The real-data tier: third-party data read from MOEDASH_SHARED_DATA."""
