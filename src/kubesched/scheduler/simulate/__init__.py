"""`kubesched simulate`: a scenario of steps (add and remove nodes and pods) played on a cluster file by the
embedded scheduler, deterministically, under one configuration or two compared.

`model.py` is the versioned JSON schema (kind Simulation).
"""
