"""The published tables and figures of urd rung 1, built from summary.json, oracle.json and the
controls' JSON: Markdown, CSV and HTML from one document model (render.py), PNG figures rendered
deterministically (figures.py), 95 % bootstrap intervals over episodes (bootstrap.py), and the
published targets' paths (targets.py). Imports core and controls.

    python -m urd.tables retention --summary tiny=results/urd/tiny/summary.json --oracle results/urd/oracle.json ...
"""
