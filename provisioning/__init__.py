"""Installer tooling: provisioning, bundles, systemd units."""
