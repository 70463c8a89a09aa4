"""What the simulated models are called and the notes printed when a figure came from one.

Constants only, with no imports, so the report (app/report.py), the demo's summary
(app/demo.py) and the command line (app/cli/_output.py) can name them without loading the
simulated provider's code.
"""

ORACLE_MODEL = "sim/oracle"
ORACLE_NOTICE = (
    "note: sim/oracle answers at a set rate (sim_oracle_accuracy) whatever the skills say; "
    "figures check plumbing, formats, checkers and cost, not learning"
)
SIM_NOTICE = (
    "note: answers come from the built-in SIMULATED model (sim/*), not a real LLM; "
    "figures show the harness working, not real-model quality"
)
