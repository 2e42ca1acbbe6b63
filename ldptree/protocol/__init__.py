"""A pilot deployment of one round: what the curator publishes, what a holder sends, and the
collector that receives untrusted reports durably (docs/deployment.md).

* :func:`publish` (curator): the partition, scaling box and certified mechanism as versioned JSON,
  with a fresh nonce; :func:`round_fingerprint` names the round.
* :func:`holder_report` (holder): one report from the holder's own record and the published
  object, after checking the round against the holder's :class:`PrivacyPolicy` and
  :class:`HolderLedger`, with randomness from the operating system's CSPRNG.
* :class:`Collector` (curator): validates, deduplicates and durably stores reports (SQLite), and
  gives the exact estimate.
"""

from ldptree.protocol._collector import STORE_FILE, Collector
from ldptree.protocol._holder import (
    HolderAnswer,
    HolderLedger,
    PrivacyPolicy,
    PrivacyPolicyError,
    holder_report,
)
from ldptree.protocol._published import (
    MECHANISMS,
    PUBLISHED_SCHEMA,
    SCHEMA_VERSION,
    PublishedRound,
    load_published,
    publish,
    round_fingerprint,
)
from ldptree.protocol._report import (
    REASONS,
    REPORT_SCHEMA,
    RejectedReportError,
    parse_report,
)

__all__ = [
    "MECHANISMS",
    "PUBLISHED_SCHEMA",
    "REASONS",
    "REPORT_SCHEMA",
    "SCHEMA_VERSION",
    "STORE_FILE",
    "Collector",
    "HolderAnswer",
    "HolderLedger",
    "PrivacyPolicy",
    "PrivacyPolicyError",
    "PublishedRound",
    "RejectedReportError",
    "holder_report",
    "load_published",
    "parse_report",
    "publish",
    "round_fingerprint",
]
