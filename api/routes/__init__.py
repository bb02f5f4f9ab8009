"""The /api/v1 routers, one module per resource."""
