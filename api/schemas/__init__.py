"""Response models of the API: what each route answers, for the OpenAPI document only."""
