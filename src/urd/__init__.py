"""urd: a reproducible pipeline for memory benchmarks."""

__version__ = "0.1.0"
