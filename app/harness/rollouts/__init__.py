"""The agent loop and model I/O: what one question costs and returns.

A `Session` opens a workspace for one command (log, cache, providers); `agent_prompts` builds
what the agent is sent (system prompt, skills inline or as tools, verified `memory` blocks);
`inference` runs questions — folded into `question_units` and split into `pools` — through the
agent; `model_io` and `telemetry` record every model call. Imports `workspace/` and `skills/`;
both the training loop and the best-of-N data tools sit on top of it.
"""
