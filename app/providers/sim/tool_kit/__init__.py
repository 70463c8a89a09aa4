"""Tools and the oracle of the simulated tool world's benchmark (app/providers/sim/tool_world.py).

The generator copies these modules into the benchmark's `tools/` folder; the harness runs them
in its sandbox (app/harness/tools/), never imports them.
"""
