"""gpu_avatar: anonymisation by the Avatar method, on the GPU when there is one.

import gpu_avatar as ga
result = ga.avatarize(df, k=20, ncp=5, seed=0)
result.avatars                       # the release
result.sensitive_unshuffled_avatars  # row i = avatar of row i, for metrics only
"""

from . import (
    distributed,  # Dask itself is imported on first use
    rules,  # ga.rules.RuleSet, ga.rules.Inequality...
)
from .advice import Advice, advise, advise_database
from .backend import Backend, resolve_backend
from .encoding.identifying import IdentifyingColumnsError
from .encoding.pseudonyms import Pseudonym
from .errors import (
    AvatarError,
    AvatarTypeError,
    BackendUnavailableError,
    FixableError,
    GpuAvatarError,
    MissingExtraError,
)
from .files import TableFile, read_table, read_table_file, write_table
from .metrics import (
    AttackMetrics,
    PrivacyMetrics,
    SignalMetrics,
    attack_metrics,
    privacy_metrics,
    signal_metrics,
    split_holdout,
)
from .metrics.verdict import ReleaseVerdict, release_verdict
from .parameters import AvatarParameters, MetricOptions
from .pipeline import AvatarizationResult, avatarize
from .planning.model import Plan, PlanReviewError
from .planning.propose import plan
from .projection import FAMD, MCA, PCA
from .relational import Database, DatabaseAvatarizationResult, avatarize_database
from .report import write_report
from .streaming import ParquetAvatarization, avatarize_parquet
from .workflow import Release, prepare_release

__version__ = "0.1.0"

__all__ = [
    "Advice",
    "AttackMetrics",
    "AvatarError",
    "AvatarParameters",
    "AvatarTypeError",
    "AvatarizationResult",
    "Backend",
    "BackendUnavailableError",
    "Database",
    "DatabaseAvatarizationResult",
    "FAMD",
    "FixableError",
    "GpuAvatarError",
    "IdentifyingColumnsError",
    "Pseudonym",
    "MCA",
    "MetricOptions",
    "MissingExtraError",
    "PCA",
    "Plan",
    "PlanReviewError",
    "PrivacyMetrics",
    "Release",
    "ReleaseVerdict",
    "SignalMetrics",
    "TableFile",
    "advise",
    "advise_database",
    "attack_metrics",
    "avatarize",
    "avatarize_database",
    "avatarize_parquet",
    "distributed",
    "ParquetAvatarization",
    "plan",
    "prepare_release",
    "privacy_metrics",
    "read_table",
    "read_table_file",
    "release_verdict",
    "rules",
    "signal_metrics",
    "split_holdout",
    "resolve_backend",
    "write_report",
    "write_table",
]
