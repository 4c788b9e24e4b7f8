"""``avatarize``: one table, in memory, in batches when it is large."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..backend import like_input, resolve_backend, snapshot, to_pandas
from ..encoding import validate_table
from ..encoding.identifying import refuse_undeclared
from ..parameters import AvatarParameters, avatar_parameters, seed_sequence
from ..planning.model import planned_parameters
from ..progress import ProgressLike, Steps
from ..rules import RuleSet
from ..synthesis import shuffle_order
from .apart import ColumnsApart
from .batches import batch_seed, plan_batches
from .copies import UniqueCopies
from .model import avatar_encoder, avatarize_rows, check_device_memory, fit_model, timed
from .result import AvatarizationResult
from .rules import RulesRun, joined_neighbours


def avatarize(
    df: pd.DataFrame,
    *,
    parameters: AvatarParameters | None = None,
    rules: Any = None,
    progress: ProgressLike = None,
    plan: Any = None,
    **settings: Any,
) -> AvatarizationResult:
    """Avatarize one table: one synthetic individual per row, same columns and dtypes.

    The parameters (``AvatarParameters``: ``k``, ``ncp``, ``column_weights``, ``types``,
    ``imputation``, ``categorical``, ``zero_distance``, ``engine``, ``backend``, ``seed``,
    ``batch_size``, ``rare_modalities``, ``column_rare_modalities``, ``rare_modality_name``,
    ``calibrate_shares``, ``unique_copies``) come as
    ``parameters`` and/or as keywords of the same names. ``k`` neighbours (2 <= k < n rows) are
    searched exactly on the first ``ncp`` axes of a FAMD (PCA when every variable is
    continuous, MCA when every variable is categorical); identifier columns are not variables
    and get fresh values; missing cells are filled temporarily and their pattern is avatarized
    through indicators; rare modalities are grouped (``rare_modalities``), and the shares of
    modalities and of missing cells calibrated to the original's (``calibrate_shares``), and
    avatars copying a row one original alone holds drawn again (``unique_copies``).
    ``seed`` makes the run reproducible (the result's ``seed`` reproduces
    an unseeded run). Above ``batch_size`` rows the table is split into batches
    (``batches.py``): the projection is fitted on a first batch that shows every modality, and
    each batch is avatarized on its own; memory then follows the batch size. ``progress``:
    None (silent), True (a tqdm bar) or a callable ``(step, done, total)``, see
    ``gpu_avatar.progress``. cuDF input gives cuDF avatars.

    ``rules`` (``gpu_avatar.rules``: a ``RuleSet``, a list of rules, or of YAML mappings) hold
    on every released row: checked on the originals, encoded before the fit, decoded and
    repaired on the whole table's unshuffled avatars (after the batches: rules over a
    table, as a group mean, see every row), from the neighbours each avatar was drawn from;
    the result's ``rules`` tells how each was held.

    ``plan`` (a ``ga.Plan`` or its file, reviewed; see ``ga.plan``) gives the column kinds,
    ``types`` over them; a plan with proposals awaiting review is refused.
    """
    frame = original = to_pandas(df)
    validate_table(frame)
    declared = parameters = planned_parameters(avatar_parameters(parameters, **settings),
                                               plan, frame.columns)
    rules = RuleSet.of(rules)
    sequence = seed_sequence(parameters.seed)
    backend = resolve_backend(parameters.backend)
    knowingly_released = refuse_undeclared(frame, parameters.types)  # before any work
    n = len(frame)
    parameters.for_rows(n)
    timings: dict[str, float] = {}
    if rules is not None:
        with timed(timings, "rules"):
            ruled = RulesRun.start(rules, frame, parameters)
        frame, parameters = ruled.encoded, ruled.parameters

    batch_size = parameters.batch_size
    groups = None  # the rare modalities' groups, learnt on the whole table if it is batched
    if batch_size is None or n <= batch_size:
        batches, seeds = [np.arange(n)], [sequence]
    else:
        with timed(timings, "batch plan"):
            encoder = avatar_encoder(parameters).partial_fit(frame)
            groups = encoder.groups_
            batches = plan_batches(frame, encoder, batch_size, sequence)
            seeds = [batch_seed(sequence, b) for b in range(len(batches))]
    steps = Steps(progress, "avatarize", total=1 + 4 * len(batches))
    first = frame.iloc[batches[0]]
    check_device_memory(backend, len(first), first.shape[1], parameters.k, parameters.ncp)
    with timed(timings, "fit", steps):
        model, first_encoded = fit_model(first, parameters, backend, groups)
    order = shuffle_order(n, sequence)
    apart = ColumnsApart(parameters.types, list(frame.columns), sequence).add(frame)
    identifiers = apart.identifiers(frame, order)
    copies = UniqueCopies() if parameters.unique_copies == "redraw" else None
    parts = [
        avatarize_rows(
            model,
            frame.iloc[rows],
            batch_sequence,
            {name: ids[rows] for name, ids in identifiers.items()},
            timings,
            steps,
            encoded=first_encoded if b == 0 else None,
            neighbours=rules is not None,
            copies=copies,
        )
        for b, (rows, batch_sequence) in enumerate(zip(batches, seeds, strict=True))
    ]
    frames, neighbours = zip(*parts, strict=True)
    del parts
    unshuffled = pd.concat(frames) if len(frames) > 1 else frames[0]
    del frames  # the batches' frames: one copy of the avatars at a time
    if len(batches) > 1:  # back to the input's row order
        unshuffled = unshuffled.iloc[np.argsort(np.concatenate(batches))]
    reports = []
    if rules is not None:
        with timed(timings, "rules"):
            kept = ruled.apply(unshuffled, joined_neighbours(list(neighbours), batches),
                               sequence)
        unshuffled, reports = kept.avatars, kept.reports
    return AvatarizationResult(
        sensitive_unshuffled_avatars=like_input(unshuffled, df),
        release_order=order,
        original=snapshot(original),
        parameters=declared.replace(ncp=model.parameters.ncp, seed=int(sequence.entropy),
                                    backend=backend.name),
        projection_kind=model.projection.kind,
        timings=timings,
        batches=None if len(batches) == 1 else batches,
        knowingly_released=knowingly_released,
        grouped_modalities=model.encoder.groups_,
        rules=reports,
        unique_copies_redrawn=None if copies is None else copies.redrawn,
        unique_copies_stayed=None if copies is None else copies.stayed,
    )
