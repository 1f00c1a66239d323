"""Updates of an A/B card: RAUC installs a signed bundle into the slot not running; the new
slot boots on trial and is kept only once the mirror is healthy on it."""
