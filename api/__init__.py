"""HTTP only: thin route handlers over service/, auth, body limits, one error envelope."""
