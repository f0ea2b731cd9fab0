"""What `rocport tune` measured, as data and as the text, tables and plot that reports, PRs and the sweep
dashboard show (the search itself, which launches servers, is agent.tune)."""
