"""The core every stage uses: errors, canonical I/O, the seeded stream, config, manifests and
their verification, provenance digests."""
