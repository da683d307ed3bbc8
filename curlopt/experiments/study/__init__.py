"""A study before it runs: the study file's data model (:mod:`.spec`), the reader that checks a TOML or dict
(:mod:`.reader`), and the plan of configurations and tasks (:mod:`.planning`)."""
