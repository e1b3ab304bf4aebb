"""The tooluse command line."""
