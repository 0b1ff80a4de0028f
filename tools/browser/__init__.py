"""JupyterLab in a headless Chromium, driven as a person would: the servers (servers.py)
and the moves (lab.py) that the browser tests (tests/browser/) and the browser benchmark
(benchmarks/browser_latency.py) share."""
