"""Scenarios as text: scenario files (``files``), ``--set`` overrides (``overrides``)
and the JSON Schemas of what ``--json`` writes (``schema``). The top room of the
engine: it may import every other.
"""
