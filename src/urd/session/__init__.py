"""What a session may do, which every system is built on: the consolidation contract (what may
cross the boundary, and at what cost), the metered model handle a system gets instead of the
model, and the decoding of answers from a context. Imports core only."""
