"""What was given, and is it valid? The scenario's inputs, declared once and checked once.

``fields`` declares each input (``input_kinds`` says how a kind of value is
described and shown), ``assumptions`` the modeling choices beyond the seed,
``presets`` the registry entries that fill other inputs, ``layers`` the one
precedence rule, ``rules`` the rules between inputs, ``workload_figures`` and
``derivation`` what is derived from hardware and the workload, ``checking`` a
layer of inputs normalised, laid over the older ones and resolved. Imports the
model (``engine.model``) and nothing above it.
"""
