"""The training loop and the gate's harness side: `Runner` drives epochs of steps (`runner`,
`step`, `batching`), validates each proposed edit against the statistical gate (`validate`,
`gate_ladder`, whose pure rules live in `core.evolution`), runs the slow update (`slow_update`,
`momentum`, `descriptions`), and keeps what resume needs (`train_state`, `checkpoint`,
`run_progress`, `observation`'s step and epoch reports, the on-disk names in `vocabulary`).

The top room: it may import `workspace/`, `skills/` and `rollouts/`, and nothing imports it
but the commands, the API, the report and the TUI.
"""
