"""Named, ready scenarios, defined from the registries."""
