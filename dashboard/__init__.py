"""The moedash dashboard: a Dash app (multi-page through one URL router) mounted inside
the FastAPI app by ``moedash.app``. Build it with ``dashboard.app.create_dash``."""
