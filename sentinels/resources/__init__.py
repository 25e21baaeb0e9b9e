"""`agentwatch sentinel resources`: CPU, memory and process count of each agent session's tree."""
