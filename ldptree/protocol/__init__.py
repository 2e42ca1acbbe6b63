"""A pilot deployment of one round: what the curator publishes, what a holder sends, and the
collector that receives untrusted reports durably (docs/deployment.md).

* :func:`publish` (curator): the partition, scaling box and certified mechanism as versioned JSON.
* :func:`holder_report` (holder): one report from the holder's own record and the published
  object, with randomness from the operating system's CSPRNG.
* :class:`Collector` (curator): validates, deduplicates and durably stores reports, and gives the
  exact estimate.
"""

from ldptree.protocol._collector import Collector
from ldptree.protocol._published import (
    MECHANISMS,
    PUBLISHED_SCHEMA,
    SCHEMA_VERSION,
    PublishedRound,
    load_published,
    publish,
)
from ldptree.protocol._report import (
    REASONS,
    REPORT_SCHEMA,
    RejectedReportError,
    holder_report,
    parse_report,
)

__all__ = [
    "MECHANISMS",
    "PUBLISHED_SCHEMA",
    "REASONS",
    "REPORT_SCHEMA",
    "SCHEMA_VERSION",
    "Collector",
    "PublishedRound",
    "RejectedReportError",
    "holder_report",
    "load_published",
    "parse_report",
    "publish",
]
