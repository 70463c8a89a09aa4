"""Best-of-N data: fork a question into N rollouts (`fork`), check them (`verifiers`, `judge`),
rank the branches and keep verified winners as memories (`rank`), and write the result out as
training data (`export`).

A sibling of `training/`: it runs the agent through `rollouts/` and never imports the training
loop, so the data tools work on a workspace that was never trained.
"""
