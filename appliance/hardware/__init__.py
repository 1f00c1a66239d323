"""Hardware profiles, the device probe, profile matching and ``mirror doctor``'s checks."""
