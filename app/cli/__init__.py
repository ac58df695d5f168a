"""The `agentlasso` command line: the server commands, and the CI gate commands `ci` and `run`."""
