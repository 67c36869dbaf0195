"""The `learned` backbone: an RWKV-7 that urd trains from a seed on its own generators' episodes
(disjoint from every evaluated one), so the benchmark's science path runs on a model that learns
in context. `plan` is light (the workflow reads it while the DAG is built); `train`, `check` and
`ship` are the jobs. Imports data, backbone and harness (the in-session control), nothing above.
"""
