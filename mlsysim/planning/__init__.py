"""Planning at scale: vectorized sweeps over scenario fields, constrained plans, Pareto fronts.

Everything here evaluates :func:`mlsysim.engine.model.equations.evaluate`, the same
equations as the scalar solve, on numpy arrays.
"""
