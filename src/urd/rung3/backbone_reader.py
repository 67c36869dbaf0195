"""An RWKV-7 backbone as the model of rung 3's session B (and of the control).

Each episode's context (a system's context(): text, or a restored state and text) is prefilled
once, and every request of the cell is decoded greedily in one batch (urd.session.context.
answer_groups, rung 1's path), up to the family's `decode` tokens or the next "\\nUser:" turn.
"""

from __future__ import annotations

from ..session.context import Decode, answer_groups

STOP = ("\nUser:",)


class BackboneReader:
    reads_states = True

    def __init__(self, name: str, handle, max_new_tokens: int):
        self.name, self.handle = name, handle
        self.decode = Decode(max_new_tokens=max_new_tokens, stop=STOP)

    def replies(self, contexts, prompts: list[list[str]]) -> list[list[str]]:
        return answer_groups(self.handle, [(c.text, c.state) for c in contexts], prompts, self.decode)
