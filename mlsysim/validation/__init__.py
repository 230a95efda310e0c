"""Checks of the model against reality: published scale-out measurements."""
