"""The admin UI's pages, one blueprint per area."""
