"""Refusal analytics over recorded responses: the classifier and the mergeable summary.

`refusals scan` is built from these parts, and so can any job runner (Ray, Spark, a
cron job): classify records with `Classifier` or `record_from_response`, count them in a
`Summary`, and merge partial summaries with `Summary.merge` in any order.

    from refusals.scan import Summary, summarize_file
    total = Summary()
    for path in paths:                      # on any workers, in any order
        total.merge(summarize_file(path))
    print(total.records, total.refused, total.filtered)
"""

from refusals.scan._classify import (
    LAYOUTS,
    BadRecord,
    Classifier,
    anthropic_batch_response,
    openai_batch_response,
    record_from_response,
)
from refusals.scan._engine import (
    SchedulerUnreachable,
    default_jobs,
    scan_dask,
    scan_local,
    summarize_file,
)
from refusals.scan._record import COLUMNS, ScanRecord
from refusals.scan._sources import Task, expand_paths, plan, run_task, sniff_layout
from refusals.scan._summary import BoundedCounter, Problem, Summary

__all__ = [
    "COLUMNS",
    "LAYOUTS",
    "BadRecord",
    "BoundedCounter",
    "Classifier",
    "Problem",
    "ScanRecord",
    "SchedulerUnreachable",
    "Summary",
    "Task",
    "anthropic_batch_response",
    "default_jobs",
    "expand_paths",
    "openai_batch_response",
    "plan",
    "record_from_response",
    "run_task",
    "scan_dask",
    "scan_local",
    "sniff_layout",
    "summarize_file",
]
