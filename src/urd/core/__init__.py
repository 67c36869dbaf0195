"""The core every stage uses: errors, canonical I/O, the seeded stream, config, manifests and
their verification, provenance digests, the runner's receipts, the hidden checkpoint's
descriptor. Imports nothing of urd."""
