"""``mlsysim ui``: the interactive explorer in the browser (the optional ``ui`` extra).

* :mod:`mlsysim.ui.state`: the page's state as ``--set`` texts, the form's fields
  (from the scenario class), the one call of the command line's text parser;
* :mod:`mlsysim.ui.encoding`: the JSON encoding of library values;
* :mod:`mlsysim.ui.api`: the JSON API as plain functions (evaluate, sweep, plan,
  explain, registry, TOML), with the request bounds;
* :mod:`mlsysim.ui.app`: the Starlette application (needs the extra);
* :mod:`mlsysim.ui.server`: binding, uvicorn, the browser;
* ``static/``: the page (``index.html``, ``app.js``, ``app.css``); Plotly.js comes
  from the installed ``plotly`` package, so nothing is fetched from the internet.
"""
