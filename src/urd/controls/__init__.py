"""The two controls of urd rung 1, computed from the replay recipes' tuning artifacts (no state
is tuned again):

- ceiling ("you starved it"): each recipe answers from its entire tuned state, no budget;
- bits curve ("your compressor is naive"): one recipe, one task, the tuned state packed top-k at
  a list of fiche budgets up to the full state.

Both go through the benchmark's own harness (urd.harness.runner.run_system, the contract check,
the judges) and fold (urd.harness.fold.fold_cell) against the in-session control's responses.

The interface to the tuning artifacts is a *tuned-state provider*: a callable taking a session
transcript and returning its tuned WKV state (urd.controls.tuned.TunedState, or a bare array).
urd.controls.artifacts.ArtifactProvider reads them from artifacts/replay/{scale}/{recipe}/
{sha256 of the transcript}/. Imports core, data, backbone, systems and the harness.
"""
