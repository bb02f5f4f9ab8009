"""Dashboard pages: each module exposes ``layout(data, **query)`` and ``register(app, data)``."""
