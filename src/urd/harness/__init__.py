"""The urd rung-1 harness: the prefill cache, fiche files, the runner (in-session control, hard
boundary, session B), the job commands, scoring, fold and `summarize`. Imports core, data,
backbone, session and systems (the job commands build them)."""
