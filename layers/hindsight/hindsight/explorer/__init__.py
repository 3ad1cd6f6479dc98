"""The memory explorer: a web page, shipped inside the package, that calls the public API.

``static/`` holds the page (``index.html``), its script and style sheet, the UI strings
and the vendored chart library (uPlot, pinned in ``explorer/package-lock.json`` at the
repository's root and copied here by ``make explorer-assets``). ``hindsight serve``
answers ``GET /explorer`` and ``GET /explorer/assets/{name}`` with them, and so does the
ExplorerFunction on AWS (the operations ``explorer_page`` and ``explorer_asset``).
"""
