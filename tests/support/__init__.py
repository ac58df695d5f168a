"""What the tests share: fake agents and a fake Anthropic API, processes, API helpers, waiting.

Tests import from here, never from another test module or a benchmark.
"""
