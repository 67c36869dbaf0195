"""The one place that imports the `rwkv` package's model code.

`rwkv.model` decides at import time which architecture `RWKV` means: RWKV_V7_ON=1 must be in the
environment before the first import, or the module silently builds the v4/v5/v6 classes. We set it
here and fail loudly if someone imported it earlier without it. The package prints banners on
stdout; they go to stderr so stdout stays clean for callers that pipe it. Its use of the
deprecated torch.jit API is the package's business: those DeprecationWarnings are silenced here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

from ..core.errors import UrdError


@contextlib.contextmanager
def _quiet():
    with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.jit")
        yield


def rwkv_model():
    """Return the `rwkv.model` module with RWKV-7 enabled."""
    if os.environ.get("RWKV_DE_VERSION") == "1":
        # DeepEmbed forwards expect s_emb tensors that g1d checkpoints do not have
        raise UrdError("RWKV_DE_VERSION=1 is set; urd's RWKV-7 checkpoints are not DeepEmbed models")
    already = "rwkv.model" in sys.modules
    if not already:
        os.environ["RWKV_V7_ON"] = "1"
    with _quiet():
        import rwkv.model as rm
    if not hasattr(rm, "RWKV_x070"):
        raise UrdError(
            "rwkv.model was imported before RWKV_V7_ON=1 was set; import urd.backbone first "
            "or export RWKV_V7_ON=1"
        )
    return rm


def load_rwkv7(checkpoint_stem: str, strategy: str):
    """RWKV(model=<path without .pth>, strategy=...) with the package's banners on stderr.

    Note: the package keeps DTYPE/DEVICE as module globals, set by the last model built; keep
    one strategy per process."""
    import torch

    # Decaying WKV states underflow into subnormal floats, which x86 CPUs handle many times
    # slower (measured on tiny: 80 ms -> 8 ms a decoded token). Flushing them to zero changes
    # values below 1e-38 only.
    torch.set_flush_denormal(True)
    rm = rwkv_model()
    with _quiet():
        return rm.RWKV_x070(model=checkpoint_stem, strategy=strategy)
