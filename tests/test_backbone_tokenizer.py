"""The harness tokenizer: same ids as the wheel's TRIE_TOKENIZER, lossless, crash-free decoding."""

import random

import pytest

from urd.backbone import tokenizer as tk
from urd.core.errors import DigestMismatch

TEXTS = [
    "",
    "Hello world!",
    "key_17 -> QX7PZ2MA9KRT\nkey_03 -> 2B4N6M8P0QRS\n",
    "User: what is the value of k42?\n\nAssistant:",
    "Clé → 值, naïve café, emoji 🦆🦢, tabs\tand  double  spaces\r\n",
    "################################################################################",
    " " * 300,
]


@pytest.fixture(scope="module")
def trie():
    from rwkv.rwkv_tokenizer import TRIE_TOKENIZER

    return TRIE_TOKENIZER(tk.vocab_path())


def test_matches_wheel_trie_tokenizer(trie):
    rnd = random.Random(0)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 \n\t:.,-_→值é🦆"
    texts = TEXTS + ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 400))) for _ in range(30)]
    for t in texts:
        assert tk.encode(t) == trie.encode(t), t


def test_every_vocabulary_entry_is_the_wheels_token(trie):
    """The vocabulary is read without literal_eval where a line needs none: every id must still
    hold the wheel's bytes (quotes inside, escapes, bytes literals, spaces)."""
    ours = tk.get_tokenizer().id_to_bytes
    assert ours == trie.idx2token
    assert len(ours) == 65529 and ours[tk.encode("'")[0]] == b"'" and ours[tk.encode('"')[0]] == b'"'


def test_round_trip_and_count():
    for t in TEXTS:
        ids = tk.encode(t)
        assert tk.decode(ids) == t
        assert tk.count_tokens(t) == len(ids)
    assert tk.count_tokens("Hello world!") < len("Hello world!")  # merges, not bytes


def test_decode_never_crashes_on_model_output():
    rnd = random.Random(1)
    for _ in range(50):
        ids = [rnd.randrange(tk.VOCAB_SIZE) for _ in range(rnd.randint(0, 40))]
        assert isinstance(tk.decode(ids), str)
    # a multi-byte character cut in half decodes with a replacement character
    ids = tk.encode("值")
    half = tk.get_tokenizer().id_to_bytes[ids[0]][:1]
    cut = tk.get_tokenizer().bytes_to_id.get(half)
    if cut is not None:
        assert tk.decode([cut]) == "\ufffd"
    assert tk.decode([0]) == ""  # end of text
    assert tk.decode([65535]) == "\ufffd"  # inside the model's vocab, absent from the file
    with pytest.raises(ValueError):
        tk.decode([65536])


def test_vocab_is_pinned(tmp_path):
    bad = tmp_path / "vocab.txt"
    bad.write_text("1 'a' 1\n", encoding="utf-8")
    with pytest.raises(DigestMismatch):
        tk.WorldTokenizer(str(bad))
    assert tk.WorldTokenizer(str(bad), expected_sha256=None).encode("aaa") == [1, 1, 1]


@pytest.mark.parametrize("seed", range(4))
def test_growing_text_is_the_full_decode_at_every_token_and_finds_the_first_stop(seed):
    tok = tk.get_tokenizer()
    rng = random.Random(seed)
    # ids of every sort: ASCII, parts of multi-byte characters (bytes tokens 1..256 hold single
    # bytes, so lone UTF-8 lead and continuation bytes), ids absent from the file, end of text
    pool = [*tok.encode("ab\n\nc é 日本 \n"), *range(1, 257), 65535, tk.END_OF_TEXT]
    stops = ("\n\n", "b\n", "\ufffdc", "本 ", "a\ufffd")  # the last one only while a character is incomplete
    for _ in range(20):
        ids = [rng.choice(pool) for _ in range(rng.randint(1, 60))]
        grown = tk.GrowingText(tok, stops)
        for n in range(1, len(ids) + 1):
            grown.add(ids[n - 1])
            text = tok.decode(ids[:n])
            assert grown.text == text and grown.n_bytes == len(text.encode("utf-8")), ids[:n]
            first = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
            if first >= 0:  # a decoder stops at the first token that shows a stop
                assert grown.cut == first, ids[:n]
                break
            assert grown.cut == -1
