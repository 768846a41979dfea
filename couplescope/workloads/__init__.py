"""The models a run couples to: the catalogue (models/), user files, the bridge contract.

base (the Workload contract and the shared checks), catalogue (find a model by name or
path), user_models (a user's .pt or .py as a Workload), bridge_contract (importing a
bridge module by path and checking its functions). Model files import torch; listing
the catalogue does not.
"""
