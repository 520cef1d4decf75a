"""`kubesched simulate --sweep FILE`: a grid of scenarios × configurations, each cell one simulation
(`kubesched.scheduler.simulate`), run in parallel on local processes or a Dask cluster, ranked by the sweep's
objective.

`spec.py` reads and bounds the sweep file and expands the grid; `cell.py` runs one cell (in a worker process);
`execute.py` runs the cells (a process pool driven from asyncio, or `distributed.Client`), each cell's result
kept once; `rank.py` ranks the configurations and renders the table, the JSON and the HTML report.
"""
