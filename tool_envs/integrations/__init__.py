"""Adapters to training libraries (TRL)."""
