"""Primitives that coordinate processes through Redis and PostgreSQL: limits, pacing, waiting."""
