"""What the engine remembers between observations: one type, ``api.status.ScalingState``.

It is defined with the status it is written to (the api layer, below this one), so the
operator writes and reads back the engine's own type, never a copy field by field.
"""

from tokenscale.api.status import ScalingState

__all__ = ["ScalingState"]
