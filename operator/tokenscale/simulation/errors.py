"""Errors of the simulator's inputs (a trace or an option), each naming the fix."""


class TraceError(ValueError):
    """A trace that cannot be read, or scaling that leaves nothing to replay."""
