"""What a study writes after its runs: the runs of one configuration read back (:mod:`.runs`), the summary
(:mod:`.summary`), the checkpoint table (:mod:`.checkpoints`), the HTML report (:mod:`.report`) and the figures
(:mod:`.figures`)."""
