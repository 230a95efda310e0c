"""What are the numbers? The model's equations: inputs in, figures out.

``equations`` holds the step of data-parallel training (the seed's equations and
the opt-in choices, on floats and numpy arrays alike); ``whole_run`` the run as a
whole (failures, checkpoints, goodput, energy). Only ``mlsysim.core`` and
``mlsysim.physics`` below; nothing else of the engine.
"""
