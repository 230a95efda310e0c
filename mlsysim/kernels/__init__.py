"""The kernel level: the time of one matrix product, attention call, collective or expert dispatch.

Each model answers with a :class:`~mlsysim.physics.bounds.KernelTime` (seconds, efficiency,
the binding term); the pure formulas live in :mod:`mlsysim.physics`, the measured tables
that pin their constants in :mod:`mlsysim.kernels.tables` (``mlsysim/data/kernels``, each
with its source), and a user's own microbenchmarks replace them for their cluster.
The scenario prices its operators through this level only.
"""
