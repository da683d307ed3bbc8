"""What a study writes after its runs, and the one public door to it: the runs of one configuration read back
(:mod:`.runs`) and reduced to the numbers the outputs read (:mod:`.aggregate`), the summary (:mod:`.summary`), the checkpoint table (:mod:`.checkpoints`), the HTML report
(:mod:`.report`), the figures (:mod:`.figures`), the output folder's lock (:mod:`.lock`) and the warning for runs
whose solves mostly failed (:mod:`.solve_failures`). Nothing here imports matplotlib at import time."""

from .checkpoints import checkpoint_rows, write_checkpoint_table
from .figures import SUMMARY_HASH_KEY, plot_study
from .lock import LOCK_NAME, FolderInUseError, FolderLock, FolderLockError
from .report import REPORT_NAME, StudyOutput, load_study_output, print_summary, write_report
from .runs import ConfigurationRuns
from .solve_failures import failed_solves_warning
from .summary import STUDY_COLUMN_DOCS, TIME_COLUMNS, study_columns, study_rows, write_study_summary

__all__ = ["ConfigurationRuns", "write_study_summary", "study_rows", "study_columns", "STUDY_COLUMN_DOCS",
           "TIME_COLUMNS", "checkpoint_rows", "write_checkpoint_table", "write_report", "load_study_output",
           "StudyOutput", "print_summary", "REPORT_NAME", "plot_study", "SUMMARY_HASH_KEY", "FolderLock",
           "FolderLockError", "FolderInUseError", "LOCK_NAME", "failed_solves_warning"]
