"""Hardware and price registries (data with provenance)."""
