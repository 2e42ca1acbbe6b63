"""Privacy accounting: what each release spends."""

from ldptree.accounting._spend import PrivacySpend

__all__ = ["PrivacySpend"]
