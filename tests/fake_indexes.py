"""Fake ``faiss`` and ``cuml`` modules for the tests: the calls ``neighbours/search.py`` makes,
with the real APIs' names, arguments and return types, computed in float32 the way the real
brute-force indexes compute, so their rounding reorders near-ties as it does on a device.

- ``faiss``: ``IndexFlatL2(d)``, ``.add(x)``, ``.search(x, k) -> (D, I)``: squared L2
  distances (float32) and labels (int64), ``-1``/``inf`` when fewer than k vectors are indexed
  (faiss's ``class_wrappers.replacement_search``); ``get_num_gpus()``,
  ``index_cpu_to_all_gpus(index)``. Inputs are cast to float32 as the real wrapper does.
- ``cuml.neighbors.NearestNeighbors(*, n_neighbors, algorithm, metric, ...)``, ``.fit(X)``
  (returns the model), ``.kneighbors(X) -> (distances, indices)``: Euclidean distances (the
  float32 square root of the clamped squared distance) and int64 indices; float64 inputs
  converted to float32 (``convert_dtype=True``); device arrays (the CuPy stand-in) in, device
  arrays out (``output_type="input"``).

Distances: ``|x|^2 + |y|^2 - 2 x.y`` with every operation in float32, clamped at zero (FAISS's
BLAS path, cuML's brute force). Ties among the reported distances go to the HIGHER index: an
index promises no order among ties, and the library must not rely on one. With
``arithmetic="worst"`` the reported distances are instead the exact distances of the cast
points moved by the largest float32 arithmetic error the library's bound admits,
``(2 d + 4) u (|x|^2 + |y|^2)`` with u = 2^-24, away from the truth: the ``k = q - 2`` nearest
(and the point itself) pushed out, the others pulled in.
"""

from __future__ import annotations

import types

import numpy as np

U = 2.0**-24


def _host(x) -> tuple[np.ndarray, types.ModuleType | None]:
    """A numpy copy of ``x`` and the CuPy stand-in module it came from (None for numpy)."""
    if hasattr(x, "get") and hasattr(x, "_module"):
        return x.get(), x._module
    return np.asarray(x), None


def squared_float32(queries: np.ndarray, base: np.ndarray, arithmetic: str = "expanded"):
    """(len(queries), len(base)) float32 squared distances, as a float32 index reports."""
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    base = np.ascontiguousarray(base, dtype=np.float32)
    if arithmetic == "expanded":
        q_norms = (queries * queries).sum(axis=1, dtype=np.float32)
        b_norms = (base * base).sum(axis=1, dtype=np.float32)
        inner = queries @ base.T  # float32 GEMM
        squared = (q_norms[:, None] + b_norms[None, :]) - np.float32(2.0) * inner
        assert squared.dtype == np.float32
        return np.maximum(squared, np.float32(0.0))
    assert arithmetic == "worst", arithmetic
    wide_q, wide_b = queries.astype(np.float64), base.astype(np.float64)
    exact = ((wide_q[:, None, :] - wide_b[None, :, :]) ** 2).sum(axis=2)
    norms = (wide_q**2).sum(axis=1)[:, None] + (wide_b**2).sum(axis=1)[None, :]
    error = (2 * queries.shape[1] + 4) * U * norms
    return exact, error  # the sign depends on k: see _select


def _select(queries, base, k: int, arithmetic: str):
    """Each query's k smallest reported distances (ties to the higher index) and labels."""
    reported = squared_float32(queries, base, arithmetic)
    if arithmetic == "worst":
        exact, error = reported
        rank = np.argsort(np.argsort(exact, axis=1, kind="stable"), axis=1, kind="stable")
        sign = np.where(rank < k - 1, 1.0, -1.0)  # the library asks for its k + 2
        reported = np.maximum(exact + sign * error, 0.0).astype(np.float32)
    n = reported.shape[1]
    reversed_order = np.argsort(reported[:, ::-1], axis=1, kind="stable")[:, :k]
    labels = (n - 1 - reversed_order).astype(np.int64)
    distances = np.take_along_axis(reported, labels, axis=1).astype(np.float32)
    if k > n:  # faiss pads with -1 labels and infinite distances
        labels = np.concatenate([labels, np.full((len(labels), k - n), -1, np.int64)], axis=1)
        pad = np.full((len(labels), k - n), np.inf, np.float32)
        distances = np.concatenate([distances, pad], axis=1)
    return distances, labels


def make_faiss(arithmetic: str = "expanded", gpus: int = 0) -> types.ModuleType:
    """A fake ``faiss`` module; ``module.searches`` counts the searches made."""
    faiss = types.ModuleType("faiss")
    faiss.searches = 0
    faiss.moved_to_gpus = 0

    class IndexFlatL2:
        def __init__(self, d: int) -> None:
            self.d = int(d)
            self.is_trained = True
            self._base = np.zeros((0, self.d), np.float32)

        @property
        def ntotal(self) -> int:
            return len(self._base)

        def add(self, x) -> None:
            n, d = x.shape
            assert d == self.d
            x = np.ascontiguousarray(x, dtype=np.float32)
            self._base = np.concatenate([self._base, x])

        def search(self, x, k: int):
            n, d = x.shape
            assert d == self.d and k > 0
            faiss.searches += 1
            return _select(np.ascontiguousarray(x, dtype=np.float32), self._base, k, arithmetic)

        def reset(self) -> None:
            self._base = np.zeros((0, self.d), np.float32)

    def index_cpu_to_all_gpus(index, co=None, ngpu=-1):
        faiss.moved_to_gpus += 1
        return index

    faiss.IndexFlatL2 = IndexFlatL2
    faiss.get_num_gpus = lambda: gpus
    faiss.index_cpu_to_all_gpus = index_cpu_to_all_gpus
    return faiss


def make_cuml(arithmetic: str = "expanded") -> tuple[types.ModuleType, types.ModuleType]:
    """Fake ``cuml`` and ``cuml.neighbors`` modules; ``neighbors.fitted`` records the dtype
    of every array fitted."""
    cuml = types.ModuleType("cuml")
    neighbors = types.ModuleType("cuml.neighbors")
    neighbors.fitted = []

    class NearestNeighbors:
        def __init__(
            self, *, n_neighbors=5, radius=1.0, algorithm="auto", metric="euclidean", p=2,
            algo_params=None, metric_params=None, n_jobs=None, verbose=False,
            output_type=None,
        ):  # fmt: skip
            assert algorithm in ("auto", "brute"), algorithm
            assert metric in ("euclidean", "l2", "sqeuclidean"), metric
            self.n_neighbors = n_neighbors
            self.algorithm = algorithm
            self.metric = metric

        def fit(self, X, y=None, *, convert_dtype=True):  # noqa: N803 - cuML's name
            host, _ = _host(X)
            neighbors.fitted.append(host.dtype)
            if host.dtype != np.float32 and not convert_dtype:
                raise TypeError("expected float32 input")
            self._fit_X = np.ascontiguousarray(host, dtype=np.float32)
            return self

        def kneighbors(
            self, X=None, n_neighbors=None, return_distance=True, convert_dtype=True,  # noqa: N803
            two_pass_precision=False,
        ):  # fmt: skip
            assert X is not None, "the fake answers explicit queries only"
            host, module = _host(X)
            k = self.n_neighbors if n_neighbors is None else n_neighbors
            assert k <= len(self._fit_X)
            squared, labels = _select(
                np.ascontiguousarray(host, dtype=np.float32), self._fit_X, k, arithmetic
            )
            if self.metric == "sqeuclidean":
                distances = squared
            else:
                distances = np.sqrt(squared, dtype=np.float32)
            if module is not None:
                distances, labels = module.asarray(distances), module.asarray(labels)
            return (distances, labels) if return_distance else labels

    neighbors.NearestNeighbors = NearestNeighbors
    cuml.neighbors = neighbors
    return cuml, neighbors
