"""The Ray backend (`--backend ray`): `backend` plays a run's games as Ray tasks; `limits` keeps
the call gates and the budget across the cluster. Importing this package does not import ray."""
