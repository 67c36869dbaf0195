"""The urd rung-1 harness: in-session control, hard boundary, session B, the contract."""
