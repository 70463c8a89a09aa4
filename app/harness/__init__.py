"""The harness: the app side of training, one subpackage per concern (docs/architecture.md#layers).

`workspace/` storage and versions, `skills/` the Agent Skills format, `rollouts/` the agent loop
and model I/O, then `training/` (the loop and the gate's harness side) and `data/` (best-of-N
fork, verify, judge, rank, export) side by side on top. Each room imports only the rooms below
it; tests/test_layering.py enforces the arrows.
"""
