"""``python -m mlsysim``: the command line."""

from mlsysim.cli import entry

entry()
