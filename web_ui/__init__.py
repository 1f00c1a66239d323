"""Admin web UI (Flask)."""
