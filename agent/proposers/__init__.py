"""Who proposes a patch for a failure: the Proposer protocol, the rule playbook (rules/) and the LLM (llm/)."""
