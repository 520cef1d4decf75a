"""The HTML reports: `explain -o html` (explanation.py) and `simulate --report` (simulation.py), each one
self-contained file (page.py: plotly.js inlined, nothing fetched) that works offline."""
