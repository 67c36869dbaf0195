"""The urd rung-1 harness: the contract, the metered model handle, the prefill cache, fiche files,
the runner (in-session control, hard boundary, session B), the job commands, scoring, fold and
`summarize`. Imports core, data, backbone and systems (the job commands build them)."""
