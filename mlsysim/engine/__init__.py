"""The scenario / solver / result engine."""
