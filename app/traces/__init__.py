"""Traces: OTLP spans decoded, read in the three attribute dialects, summed up per trace. Pure."""
