"""How is it told? Everything that reads a result and says it in words.

``explain`` (with ``explain_job``, ``explain_layout``, ``layout_steps`` and
``whole_run_steps``) prints the derivation; ``headline`` the answer in one line;
``notes`` and ``notes_layout`` the constraint trace; ``bands`` the prediction
intervals; ``scale`` the size of a layout beside published runs; ``timeline`` one
update as segments per pipeline stage, for a picture. Imports the
model and the inputs, never the result type or the scenario above it.
"""
