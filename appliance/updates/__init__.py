"""What the running mirror knows of A/B updates: the slots (RAUC's status) and the update
queue (a request the admin page leaves, the progress the root-run installer writes)."""
