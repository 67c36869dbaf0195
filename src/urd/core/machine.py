"""The machine a run made its bytes on: one record for every job that writes one (the training
record, the shipped checkpoint's, a tuning artifact's costs). torch is imported only when asked
for: the module stays light for the jobs that never load it."""

from __future__ import annotations

import platform


def cpu_model() -> str:
    """The processor's name (Linux names it in /proc/cpuinfo; platform.processor() is often empty)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            return next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")),
                        platform.processor() or platform.machine())
    except OSError:
        return platform.processor() or platform.machine()


def machine_record() -> dict:
    """What a CPU run's bytes depend on besides its inputs: the processor and torch's kernel
    choice for it (AVX512, AVX2 and the generic kernels each train other bytes), torch and Python."""
    import torch

    return {"cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine()}
