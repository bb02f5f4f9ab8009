"""The Dash UI: pages (layout + callbacks over service/), figure builders, components."""
