"""The footprint sentinel: how many agent-related processes the host runs, by kind.

classify: signatures and the first-match classifier; scan: one pass over /proc;
metrics: the families written to the spool; main: the loop behind `agentwatch sentinel footprint`.
"""
