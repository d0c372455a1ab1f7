"""The reliability proofs behind scripts/reliability/prove_reliability.py (one module per proof)."""
