"""Sentinels: one small process each, measuring one input and writing one spool file."""
