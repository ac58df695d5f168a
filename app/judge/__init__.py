"""The AI judge: prompts and verdicts (pure), the model call, keys, setup, the cache, run judging.

Import the module you need: this package loads nothing on its own, so the API process, which
reads verdicts and prompts, never loads the model SDK (about 77 MB) that `client` needs.
"""
