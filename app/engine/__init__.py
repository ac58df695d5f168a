"""The worker engine: lanes of agent calls, judge chunks, and a worker's state and upkeep.

Nothing here is imported by the API process but `judging` (which loads no model SDK).
"""
