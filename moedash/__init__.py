"""Composition root: settings, create_app, the CLI and the upload client; nothing imports it."""
