"""The playground: the whole autoscaling loop on one machine (a shell layer: processes, I/O)."""
