"""Privacy accounting: what each release spends, certified verification, black-box audit."""

from ldptree.accounting._account import LedgerScope, PrivacyAccount
from ldptree.accounting._admit import AdmissionError, HandWritten, admit
from ldptree.accounting._audit import AuditResult, audit_ldp
from ldptree.accounting._channels import (
    Channel,
    Divergences,
    FiniteChannel,
    LaplaceChannel,
    Sampling,
    binary_channel,
    grid_laplace_channel,
)
from ldptree.accounting._composed import CompositionCertificate
from ldptree.accounting._law import (
    AffineInput,
    AffineLabelMap,
    CellBlock,
    FeatureBlock,
    IndexBlock,
    LabelBlock,
    RecordBlock,
    ReportLaw,
    VerifiableMechanism,
)
from ldptree.accounting._ledger import Group, LedgerEntry, PrivacyLedger
from ldptree.accounting._release import ReleaseCertificate
from ldptree.accounting._reuse import KeyReuseWarning
from ldptree.accounting._sampler import SamplerCheck, check_sampler
from ldptree.accounting._spend import PrivacySpend, spend_of
from ldptree.accounting._verify import LDPCertificate, SampledCaveat, Witness, verify_ldp
from ldptree.mechanisms._provenance import Provenance, provenance

__all__ = [
    "AdmissionError",
    "AffineInput",
    "AffineLabelMap",
    "AuditResult",
    "CellBlock",
    "Channel",
    "CompositionCertificate",
    "Divergences",
    "FeatureBlock",
    "FiniteChannel",
    "Group",
    "HandWritten",
    "IndexBlock",
    "KeyReuseWarning",
    "LDPCertificate",
    "LabelBlock",
    "LaplaceChannel",
    "LedgerEntry",
    "LedgerScope",
    "PrivacyAccount",
    "PrivacyLedger",
    "PrivacySpend",
    "Provenance",
    "RecordBlock",
    "ReleaseCertificate",
    "ReportLaw",
    "SampledCaveat",
    "SamplerCheck",
    "Sampling",
    "VerifiableMechanism",
    "Witness",
    "admit",
    "audit_ldp",
    "binary_channel",
    "check_sampler",
    "grid_laplace_channel",
    "provenance",
    "spend_of",
    "verify_ldp",
]
