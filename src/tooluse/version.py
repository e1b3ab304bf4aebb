"""The version of tooluse, written once: the package metadata and ``tooluse.__version__`` read it."""

__version__ = "0.1.0"
