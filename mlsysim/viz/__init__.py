"""Plots of sweeps and plans (matplotlib, the optional ``plot`` extra: ``pip install 'mlsysim[plot]'``).

matplotlib is imported only when a plot is drawn, so ``import mlsysim`` never loads it.
"""
