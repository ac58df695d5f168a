"""Files from other tools (CSV, promptfoo, LangSmith, Langfuse) turned into import items: each
source item's cases in the JSON Lines line's shape, and what of it was imported and what not.

Pure: bytes in, items out. The import service validates and stores the cases as it does a
JSON Lines import's lines (app/services/transfer.py), so every format gets the same rules.
"""
