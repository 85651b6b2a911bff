"""The directcoll command line."""
