"""The ``tokenscale`` command line."""
