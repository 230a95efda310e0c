"""Pure formulas on floats and numpy arrays alike (SI units: bytes, seconds, bytes/second).

Nothing here knows about scenarios, Quantities or the command line; the scalar
solve and the vectorized sweep both call these functions.
"""
