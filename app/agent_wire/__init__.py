"""What travels between the platform and an agent under test, with no I/O: the target of a
call and its result, the reply in an answer, and each protocol's request and reply mapping
(contract sections 3, 13 and 14). The server's client (agentlasso.agents) and the CI machine's
(agentlasso.cli) both speak through it."""
