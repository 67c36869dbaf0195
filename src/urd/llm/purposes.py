"""The purposes this project's calls are made for; each can be pinned to its own model."""

EXTRACT = "extract"
CONTRADICTION = "contradiction"
UPDATE = "update"
UPDATE_CONFIRM = "update_confirm"
REANCHOR = "reanchor"
REANCHOR_CHECK = "reanchor_check"
# the planting suite: the character deciding, the layered arm's summary, the judge
DECIDE = "decide"
SUMMARIZE = "summarize"
JUDGE = "judge"
# urd rung 3: a reply to a session-B request from its context; its own routes (urd.rung3.live),
# so the agent-memory reports' purposes stay as they were
REPLY = "reply"
# and the notes its summary system writes in session A on the live route (urd.rung3.live.LLMWriter)
NOTES = "notes"

PURPOSES = (EXTRACT, CONTRADICTION, UPDATE, UPDATE_CONFIRM, REANCHOR, REANCHOR_CHECK, DECIDE, SUMMARIZE, JUDGE)
