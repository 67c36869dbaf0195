"""gzip_tail: the longest tail of the transcript whose gzip fits the budget (recency). In a
rung-2 chain the tail is taken of the prior fiche's text followed by the new transcript."""

from __future__ import annotations

import gzip

from .base import MemorySystem


def squeeze(text: str) -> bytes:
    # mtime=0 and a fixed level: the same tail always gives the same bytes.
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def longest_fitting_tail(transcript: str, budget: int | None) -> bytes:
    if budget is None or len(squeeze(transcript)) <= budget:
        return squeeze(transcript)
    # gzip size is not monotone in length, so test every start offset and keep the longest
    # tail that fits; for a few-KB transcript that is a fraction of a second.
    for start in range(len(transcript)):
        packed = squeeze(transcript[start:])
        if len(packed) <= budget:
            return packed
    return b""


class GzipTail(MemorySystem):
    name = "gzip_tail"
    consolidates_from_text = True

    def consolidate(self, transcript, budget_bytes, prior=None):
        # in a chain, the previous tail comes before this session: recency across sessions too
        before = gzip.decompress(prior).decode("utf-8") if prior else ""
        return longest_fitting_tail(before + transcript, budget_bytes)

    def context(self, fiche, header):
        text = gzip.decompress(fiche).decode("utf-8") if fiche else ""
        return self.text_context(text.strip("\n"), header)
