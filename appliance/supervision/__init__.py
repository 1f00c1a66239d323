"""Running under systemd: the sd_notify client and the heartbeat that drives it."""
