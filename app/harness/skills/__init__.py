"""The Agent Skills format: SKILL.md folders in and out (`agent_skills`) and which skill an
agent opened during a rollout (`activation`).

Sits on `workspace/` only: a skill is a version's file with a format, never a model call, so
the rollouts that show skills to an agent and the training loop that edits them both build on it.
"""
