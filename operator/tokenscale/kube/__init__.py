"""The only code that writes to the Kubernetes API: apply, status, reads of owned objects."""
