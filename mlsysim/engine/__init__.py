"""The scenario / solver / result engine, in rooms by the question each answers.

Lowest first; a room imports only the rooms above it in this list
(``tests/test_architecture.py`` holds the order, ``ENGINE_ROOMS``):

``model/``
    What are the numbers? ``equations`` (one step of data-parallel training, the
    seed's equations and the opt-in choices, on floats and arrays alike) and
    ``whole_run`` (failures, checkpoints, goodput, energy).
``inputs/``
    What was given, and is it valid? The field table (``fields``, ``input_kinds``),
    ``assumptions``, ``presets``, the precedence rule (``layers``), the rules between
    inputs (``rules``), what is derived from hardware and workload
    (``workload_figures``, ``derivation``) and the one check (``checking``).
``reports/``
    How is it told? ``explain`` (with ``explain_job``, ``explain_layout``,
    ``layout_steps``, ``whole_run_steps``), ``headline``, ``notes``, ``notes_layout``,
    ``scale``, the prediction intervals (``bands``) and the picture of one update
    (``timeline``). They read a result through
    :class:`~mlsysim.engine.reports.view.ResultView`, never the result type.
``results``
    :class:`~mlsysim.engine.results.DataParallelScaleOutResult`, the typed result;
    its ``explain()`` and ``interval()`` call the reports.
``solvers/``
    ``DataParallelScaleOutModel``: checked inputs -> equations -> result.
``scenario_types``, ``scenario_definitions/``, ``scenarios``, ``shortcuts``
    The front door: the scenario, the named scenarios, ``mlsysim.estimate``.
``io/``
    Scenarios as text: scenario files (``files``), ``--set`` (``overrides``) and
    the JSON Schemas of what ``--json`` writes (``schema``).

Nothing here imports ``validation``, ``planning``, the CLI, the page or the plots.
"""
