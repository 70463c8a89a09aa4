"""Serving: the workspace's trained agent behind an OpenAI-compatible HTTP endpoint.

`chat` parses requests and builds responses in the OpenAI chat-completions format, `agent`
answers one request with the agent loop of app/harness/rollouts/inference.py and logs it as a
prediction of the serve run, `app` is the FastAPI application and `server` runs it under
uvicorn with the workspace's writer lock held (docs/serving.md).
"""
