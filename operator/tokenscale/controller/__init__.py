"""The thin Kopf shell: parse → observe → decide → render → apply → report."""
