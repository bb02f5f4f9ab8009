"""Getting data in: parsers, the HTTP API, the CLI."""
