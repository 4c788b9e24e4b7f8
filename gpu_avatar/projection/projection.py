"""Projection: FAMD, with PCA and MCA as its special cases, exact and chunked.

Scaling follows saiph (the reference implementation):

- continuous variable: ``(x - mean) / std`` (ddof = 0); a column whose std is negligible against
  its mean is a constant (``encoding.kinds.column_scales``): its std is infinite, it scales to 0;
- categorical variable: one column per modality ``(I_c - p_c) / sqrt(p_c)``;
- variable weights ``w`` repeated over modalities; the axes are the eigenvectors of
  ``diag(w) X^T X diag(w)``, i.e. the right singular vectors of ``X diag(w) / n``, un-weighted
  by ``1 / sqrt(w)`` (FAMD, PCA; MCA keeps them as they are);
- MCA equals the categorical part of FAMD scaled by ``1 / sqrt(number of variables)``.

The one-hot matrix is never built: the Gram matrix comes from the continuous block's product,
per-modality sums of the scaled continuous values and cross-tabulations of each pair of
categorical variables (``_gram``), and coordinates add one row of a per-modality table per
categorical variable (``transform``), row chunk by row chunk, in float64. The Gram matrix is
decomposed on the host with ``eigh``, sorted by decreasing eigenvalue; each axis's sign is fixed
so that its largest-magnitude loading is positive. Components whose eigenvalue is numerically
zero (the one-hot columns of a variable are linearly dependent) are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..backend import CPU, Backend
from ..encoding import EncodedTable, TableEncoder
from ..encoding.kinds import column_scales
from ..errors import AvatarError
from ..parameters import check_column_weights

FAMD_KIND, PCA_KIND, MCA_KIND = "famd", "pca", "mca"
_NULL_EIGENVALUE = 1e-10  # relative to the largest eigenvalue
_CHUNK_BYTES = 64 * 2**20


def projection_kind(n_continuous: int, n_categorical: int) -> str:
    """FAMD for mixed data, PCA for continuous only, MCA for categorical only (as saiph)."""
    if n_categorical == 0:
        return PCA_KIND
    if n_continuous == 0:
        return MCA_KIND
    return FAMD_KIND


def chunk_rows(row_bytes: int, budget: int = _CHUNK_BYTES) -> int:
    """Rows per chunk so that one chunk of ``row_bytes`` per row stays within ``budget``."""
    return max(1024, budget // max(row_bytes, 1))


def sorted_axes(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (decreasing, negative rounding errors set to 0) and eigenvectors (columns)
    of the symmetric ``gram``, by ``eigh`` on the host, numerically null axes dropped (the
    first always kept: where nothing varies, one null axis); each axis's sign fixed so that
    its largest-magnitude loading is positive (the same axes whichever backend made ``gram``)."""
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues, eigenvectors = np.maximum(eigenvalues[order], 0.0), eigenvectors[:, order]
    keep = eigenvalues > _NULL_EIGENVALUE * max(eigenvalues[0], np.finfo(float).tiny)
    keep[0] = True
    eigenvalues, eigenvectors = eigenvalues[keep], eigenvectors[:, keep]
    largest = np.abs(eigenvectors).argmax(axis=0)
    eigenvectors *= np.sign(eigenvectors[largest, np.arange(eigenvectors.shape[1])])
    return eigenvalues, eigenvectors


class Projection:
    """FAMD/PCA/MCA on an ``EncodedTable``.

    The fit (means, proportions, Gram matrix, axes) runs on the host for every backend: the
    encoded table is there already, its passes are compiled (numba), and the axes are then the
    same bits whichever backend runs next. Coordinates are computed on the backend by
    elementwise operations in a fixed order (no matrix product, whose summation order differs
    between BLAS and cuBLAS), so the CPU and the GPU give identical coordinates, hence
    identical neighbours.
    """

    def __init__(self, kind: str, variable_weights: np.ndarray, backend: Backend) -> None:
        self.kind = kind
        self.variable_weights = np.asarray(variable_weights, dtype=np.float64)
        self.backend = backend

    def fit(self, encoded: EncodedTable) -> Projection:
        continuous = encoded.continuous
        n = encoded.n_rows
        self.mean_ = continuous.mean(axis=0)
        self.std_ = column_scales(continuous.std(axis=0), self.mean_)
        self.n_modalities_ = list(encoded.n_modalities)
        self.offsets_ = np.concatenate([[0], np.cumsum(self.n_modalities_)]).astype(np.int64)
        proportions = [
            np.bincount(encoded.categorical[:, j], minlength=m) / n
            for j, m in enumerate(self.n_modalities_)
        ]
        self.proportions_ = np.concatenate(proportions) if proportions else np.zeros(0)
        self.scale_ = 1.0 / np.sqrt(len(self.n_modalities_)) if self.kind == MCA_KIND else 1.0

        weights = np.concatenate(
            [
                self.variable_weights[: encoded.continuous.shape[1]],
                np.repeat(self.variable_weights[encoded.continuous.shape[1] :], self.n_modalities_),
            ]
        )
        with np.errstate(over="ignore"):  # checked just below
            weighted = weights[:, None] * self._gram(encoded) * weights[None, :]
        if not np.isfinite(weighted).all():  # the values are bounded: only weights overflow it
            raise AvatarError(
                f"column_weights up to {weights.max():.3g} overflow the projection; use "
                "weights of a sensible scale (e.g. between 0.01 and 100)"
            )
        eigenvalues, eigenvectors = sorted_axes(weighted)
        components = eigenvectors.T
        if self.kind != MCA_KIND:
            components = components / np.sqrt(weights)
        self.eigenvalues_ = eigenvalues
        total = eigenvalues.sum()
        self.explained_variance_ratio_ = (
            eigenvalues / total if total > 0 else np.zeros_like(eigenvalues)
        )
        self.components_ = components
        return self

    @property
    def n_components_(self) -> int:
        return self.components_.shape[0]

    def _row_chunks(self, encoded: EncodedTable, row_bytes: int, backend: Backend):
        """(scaled continuous values, categorical codes) of successive row chunks, on
        ``backend``; a chunk's temporaries stay within ``_CHUNK_BYTES``."""
        mean, std = backend.asarray(self.mean_), backend.asarray(self.std_)
        step = chunk_rows(row_bytes)
        for start in range(0, encoded.n_rows, step):
            stop = min(start + step, encoded.n_rows)
            continuous = backend.asarray(encoded.continuous[start:stop])
            yield (continuous - mean) / std, backend.asarray(encoded.categorical[start:stop])

    def _modality_blocks(self):
        """Per categorical variable: (column slice, proportions, sqrt of the proportions)."""
        root = np.sqrt(np.where(self.proportions_ > 0, self.proportions_, 1.0))
        for j in range(len(self.n_modalities_)):
            block = slice(int(self.offsets_[j]), int(self.offsets_[j + 1]))
            yield block, self.proportions_[block], root[block]

    def _gram(self, encoded: EncodedTable) -> np.ndarray:
        """``S^T S`` for the scaled matrix ``S = [x~ | z]`` without building ``z``: with
        ``z[r, m] = (1[code_r = m] - p_m) / sqrt(p_m)``, a (continuous, modality) entry is
        ``(sum of x~ over the rows of m - p_m sum of x~) / sqrt(p_m)`` and a (modality,
        modality') entry ``(N_mm' - n_m p_m' - p_m n_m' + n p_m p_m') / sqrt(p_m p_m')``, with
        ``N`` the two variables' cross-tabulation and ``n_m = n p_m`` the counts. On the
        host, chunk by chunk."""
        n_continuous = encoded.continuous.shape[1]
        width = n_continuous + int(self.offsets_[-1])
        gram = np.zeros((width, width))
        modalities = list(self._modality_blocks())
        for x, codes in self._row_chunks(encoded, 8 * (2 * n_continuous + 2), CPU):
            gram[:n_continuous, :n_continuous] += x.T @ x
            if not modalities:
                continue
            column_sums = x.sum(axis=0)
            sums, cross = self._modality_statistics(x, codes)
            counts = np.diagonal(cross)
            for j, (block_j, p_j, root_j) in enumerate(modalities):
                counts_j = p_j * x.shape[0]  # this chunk's expected counts
                rows = slice(n_continuous + block_j.start, n_continuous + block_j.stop)
                centred_sums = sums[block_j] - p_j[:, None] * column_sums
                gram[rows, :n_continuous] += centred_sums / root_j[:, None]
                for block_l, p_l, root_l in modalities[j:]:
                    entry = (
                        cross[block_j, block_l]
                        - counts[block_j][:, None] * p_l[None, :]
                        - p_j[:, None] * counts[block_l][None, :]
                        + counts_j[:, None] * p_l[None, :]
                    ) / (root_j[:, None] * root_l[None, :])
                    others = slice(n_continuous + block_l.start, n_continuous + block_l.stop)
                    gram[others, rows] += entry.T  # l >= j: on or below the diagonal
        lower = np.tril_indices(width, -1)
        gram[lower[1], lower[0]] = gram[lower]  # exactly symmetric, from the lower triangle
        return gram

    def _modality_statistics(self, x: np.ndarray, codes: np.ndarray):
        """Per modality, the sums of the chunk's scaled continuous values (modalities, pc),
        and the co-occurrence counts of every modality pair of two variables j <= l
        (modalities, modalities; a variable's own block is diagonal: its counts), in one
        compiled pass over the rows in order (``modalities.py``)."""
        from .modalities import modality_statistics

        return modality_statistics(x, codes, self.offsets_)

    def transform(self, encoded: EncodedTable, n_components: int | None = None) -> Any:
        """Coordinates (n, n_components) as a backend array: the continuous values times
        their loadings, added axis by axis, plus, per categorical variable, the row of its
        modality in ``components / sqrt(p)`` minus the constant ``sum_m sqrt(p_m)
        components[m]`` (an unseen modality adds none)."""
        backend, xp = self.backend, self.backend.xp
        components = self.components_[: n_components or self.n_components_]
        n_continuous = self.mean_.shape[0]
        loadings = backend.asarray(np.ascontiguousarray(components[:, :n_continuous].T))
        tables = []
        for block, p, root in self._modality_blocks():
            columns = slice(n_continuous + block.start, n_continuous + block.stop)
            modality_loadings = components[:, columns].T
            shift = ((p / root)[:, None] * modality_loadings).sum(axis=0)
            tables.append(
                (backend.asarray(modality_loadings / root[:, None]), backend.asarray(shift))
            )
        parts = []
        row_bytes = 8 * (n_continuous + 2 * components.shape[0])
        for x, codes in self._row_chunks(encoded, row_bytes, backend):
            coordinates = xp.zeros((x.shape[0], components.shape[0]))
            # in place: the same sums, without a new (rows, components) array for each term
            for d in range(n_continuous):
                coordinates += x[:, d : d + 1] * loadings[d]
            for j, (table, shift) in enumerate(tables):
                row = table[xp.maximum(codes[:, j], 0)]
                row *= (codes[:, j] >= 0)[:, None]  # an unseen modality adds none
                row -= shift
                coordinates += row
            coordinates *= self.scale_
            parts.append(coordinates)
        return xp.concatenate(parts, axis=0)

    def inverse_transform(self, coordinates: Any) -> tuple[Any, Any]:
        """Continuous values and modality frequencies (n, total modalities) from coordinates.

        Uses the pseudo-inverse of the axes, as saiph does; exact when all components are kept
        and the variable weights are uniform.
        """
        backend, xp = self.backend, self.backend.xp
        coordinates = backend.asarray(coordinates)
        inverse = backend.asarray(np.linalg.pinv(self.components_[: coordinates.shape[1]].T))
        scaled = (coordinates / self.scale_) @ inverse
        n_continuous = self.mean_.shape[0]
        std = np.where(np.isinf(self.std_), 0.0, self.std_)  # a constant is its mean
        continuous = scaled[:, :n_continuous] * backend.asarray(std) + backend.asarray(self.mean_)
        proportions = backend.asarray(self.proportions_)
        frequencies = scaled[:, n_continuous:] * xp.sqrt(proportions) + proportions
        return continuous, frequencies


def expand_variable_weights(
    encoder: TableEncoder, column_weights: Mapping[Any, float] | None
) -> np.ndarray:
    """One weight per encoded variable; an indicator takes the weight of its column."""
    column_weights = check_column_weights(column_weights)
    known = set(encoder.continuous_columns_) | set(encoder.categorical_columns_)
    unknown = [c for c in column_weights if c not in known]
    if unknown:
        raise AvatarError(
            f"column_weights names unknown column(s) or columns that are not variables "
            f"{unknown}; "
            f"variables are {sorted(map(str, known))}"
        )
    return np.array([float(column_weights.get(c, 1.0)) for c in encoder.variable_sources_])
