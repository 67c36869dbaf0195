"""Where a learned model's T1 recall falls off: by key kind, episode size and place in the code.

    .venv/bin/python benchmarks/learned_recall.py PATH [--sizes 21x10,32x12,64x12] [--episodes 8] [--places]

PATH is a training run's resume point (`OUT.resume.pt`: its settings say the shape and head) or
a checkpoint in the released format (`models/urd-learned-rwkv7-L2-D128.pth`: the head read over
the reply vocabulary). For each size (pairs x code length), on held-out episodes of the training
family that ask every key shown (each hot key once, every cold key, and the unseen ones), each
query read from the transcript's end state as the in-session control reads it, teacher-forced:
prints the share of whole replies right (every token greedy's pick: what greedy decoding gives)
and of reply tokens right, for hot keys (shown 5 times), cold keys (once) and unseen keys (the
reply NONE). `--places` adds the share right at each token of a seen key's reply (the code's
first token is 0; `end` is the reply's last, its newline). Figures, not assertions: a diagnostic
of where recall breaks, beside the held-out score_A in a run's record.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from urd.backbone.tokenizer import get_tokenizer  # noqa: E402
from urd.core.config import load_config  # noqa: E402
from urd.learn import model as M  # noqa: E402
from urd.learn import plan  # noqa: E402
from urd.learn import stream as S  # noqa: E402
from urd.learn import train as T  # noqa: E402

# held-out indices of the training family kept for development tools (S.RANGES["dev"]): neither
# training, a run's evaluations nor the check at use's fresh episodes draw them
FIRST = S.RANGES["dev"][0]


def load(path: Path, tasks: dict, ex: S.Exclusions, tok) -> tuple[M.Trainable, int]:
    """The model and its training seed (the held-out episodes are of its family)."""
    ck = torch.load(path, map_location="cpu", weights_only=False)
    if "weights" in ck and "settings" in ck:  # a resume point
        s = plan.settings_of(ck["settings"], str(path))
        net = M.Trainable(M.init_weights(s["seed"], s["n_layer"], s["n_embd"]), T.Data(s, tasks, ex, tok).vocab())
        net.load_state_dict(ck["weights"])
        return net, s["seed"]
    # a released checkpoint: the reply vocabulary (a full_loss run's head held more ids)
    s = plan.settings_of({})
    return M.Trainable({k: v.float() for k, v in ck.items()}, T.Data(s, tasks, ex, tok).vocab()), s["seed"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--sizes", default="21x10,32x12,48x12,64x12")
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--places", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    tasks, ex = T.stream_inputs(plan.learn_spec(load_config(REPO / "config/config.yaml")))
    tok = get_tokenizer()
    net, seed = load(a.path, tasks, ex, tok)
    print(f"{a.path}: {a.episodes} held-out episodes a size, each query from the transcript's end, teacher-forced")
    for size in a.sizes.split(","):
        pairs, length = (int(x) for x in size.split("x"))
        base = {**tasks["t1"], "value_length": length}
        whole, tokens, places = {}, {}, {}
        with torch.no_grad():
            for i in range(a.episodes):
                ep = S.t1_episode(seed, S.indices("dev", FIRST + i, 1)[0], pairs, base, ex, query_all=True)
                ids, flags, replies, starts = S.sequence_with_replies(tok, ep)
                _, _, hits = net.loss_and_hits(ids, flags, starts)
                for kind, at in replies:
                    right = [p in hits for p in at]
                    whole.setdefault(kind, []).append(all(right))
                    tokens.setdefault(kind, []).extend(right)
                    if kind != "unseen":
                        for j, ok in enumerate(right):
                            places.setdefault("end" if j == len(right) - 1 else j, []).append(ok)
        share = lambda xs: f"{sum(xs) / len(xs):.2f}"
        print(f"{pairs} pairs, {length}-character codes: " + "; ".join(
            f"{kind} whole {share(whole[kind])} of {len(whole[kind])}, tokens {share(tokens[kind])}"
            for kind in ("hot", "cold", "unseen") if kind in whole))
        if a.places:
            order = sorted((k for k in places if k != "end"), key=int) + ["end"]
            print("  seen keys by token: " + ", ".join(f"{k}: {share(places[k])} ({len(places[k])})" for k in order))


if __name__ == "__main__":
    main()
