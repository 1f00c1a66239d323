"""The `mirror` command line."""
