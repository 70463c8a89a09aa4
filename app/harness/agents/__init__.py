"""Bring your own agent: run an agent that lives outside this repository on a skills version.

`protocol` is the seam (the task, the skills version, the endpoint, the result with its
failure reason), `gateway` the recording OpenAI-compatible endpoint an outside agent calls,
`command_agent` runs any executable as the agent, `python_agent` a `module:function`,
`rollout` runs one agent on one task through the gateway, and `training_seam` makes it the
agent of a run's rollouts (`[agent]` in the config; docs/agents.md).
"""
