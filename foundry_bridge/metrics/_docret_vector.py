"""The numpy engine behind ``document_retrieval_batch``: many queries, no Python loop over documents in the math.

Pipeline: flatten every row's items with C-level ``map`` calls and check their types per column (a row with any odd
item is handed to the one-query path, which reproduces the library's exact result or error). Rows go in chunks of
``CHUNK_ROWS`` so the items stay in CPU cache across those passes. Ids become integer codes through one small dict
per chunk (exactly the library's dict semantics); if an id is unhashable, through ``hash`` instead, with every pair
matched by code then checked with ``==``. Two engines compute the parts:

- the matrix engine (rows with <= ``SHORT_ROW`` items per list): rows padded to (rows, width) matrices; duplicates
  and ground-truth matches by broadcast comparison; ranking by a per-row lexsort on (first occurrence, -score);
- the sort engine (any length): flat arrays keyed by ``row * n + code``, stable argsorts, one lexsort on
  (row, -score, first position).

``_finish`` then does the shared arithmetic (top-3 gains, ideal top 3, XDCG, holes, string-ordered fidelity sums),
always adding floats in the library's order, so results are bit-identical, not merely close.
``evaluate_columns`` takes already columnar input (``foundry_bridge.dataset.docret_jsonl`` feeds it from pyarrow).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain, count, repeat
from typing import Any, NamedTuple

import numpy as np

from ..wire import passes
from . import _docret_core as _dr

__all__ = ["EXACT_INT", "LABEL_BOUND", "evaluate_columns", "evaluate_rows", "vector_ok"]

_INT_TYPES = frozenset({int})
_SCORE_TYPES = frozenset({float, int, bool, np.float64})
EXACT_INT = 2**53
LABEL_BOUND = 2**30
_EMPTY: dict[str, Any] = {}
#: Rows per pass through the engines (bounded memory, cache-friendly).
CHUNK_ROWS = 2048


def vector_ok(cfg: _dr.Config) -> bool:
    """Whether numpy reproduces this configuration exactly (else every row takes the one-query path)."""
    return cfg.numeric_thresholds and cfg.lo > -LABEL_BOUND and cfg.hi < LABEL_BOUND


def evaluate_rows(
    gts: list[Any], rets: list[Any], cfg: _dr.Config
) -> list[dict[str, Any] | _dr.DocumentRetrievalError]:
    """Evaluate ground-truth / retrieved lists row by row in order; rows numpy cannot do exactly (bad input,
    crashes, exotic types) go through the one-query path, which also produces their errors."""
    if not vector_ok(cfg):
        return [_dr.evaluate_or_error(g, r, cfg) for g, r in zip(gts, rets, strict=True)]
    fast, rets_fast = _engine_rows(gts, rets)
    idx = np.flatnonzero(fast)
    every = len(idx) == len(gts)
    results, ok = _in_chunks(
        gts if every else [gts[i] for i in idx.tolist()],
        rets_fast if every else [rets_fast[i] for i in idx.tolist()],
        cfg,
    )
    if every and ok.all():
        return results  # every row done by the engines
    out: list[Any] = [None] * len(gts)
    for i, done, good in zip(idx.tolist(), results, ok.tolist(), strict=True):
        if good:
            out[i] = done
    return [_dr.evaluate_or_error(gts[i], rets[i], cfg) if done is None else done for i, done in enumerate(out)]


def _engine_rows(gts: list[Any], rets: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Which rows the engines may take (ground truth a non-empty list, both lists of at most ``MAX_ITEMS``) and the
    retrieved lists they read (the library ignores a non-list ``retrieved_documents``: an empty list)."""
    n = len(gts)
    if set(map(type, gts)) <= {list} and set(map(type, rets)) <= {list}:
        g_len = np.fromiter(map(len, gts), dtype=np.int64, count=n)
        r_len = np.fromiter(map(len, rets), dtype=np.int64, count=n)
        return (g_len > 0) & (g_len <= _dr.MAX_ITEMS) & (r_len <= _dr.MAX_ITEMS), rets
    fast = np.zeros(n, dtype=bool)
    rets_fast = list(rets)
    for i, (g, r) in enumerate(zip(gts, rets, strict=True)):
        if type(g) is not list or not 0 < len(g) <= _dr.MAX_ITEMS or r is None:
            continue
        if type(r) is not list:
            if isinstance(r, list):
                continue
            rets_fast[i] = []
        elif len(r) > _dr.MAX_ITEMS:
            continue
        fast[i] = True
    return fast, rets_fast


def _in_chunks(gts: list[Any], rets: list[Any], cfg: _dr.Config) -> tuple[list[Any], np.ndarray]:
    """The engines over ``CHUNK_ROWS`` rows at a time (the items stay in CPU cache across the passes)."""
    results: list[Any] = []
    oks = [np.zeros(0, dtype=bool)]
    for a in range(0, len(gts), CHUNK_ROWS):
        res, ok = _evaluate_lists(gts[a : a + CHUNK_ROWS], rets[a : a + CHUNK_ROWS], cfg)
        results.extend(res)
        oks.append(ok)
    return results, np.concatenate(oks)


def _items_are_dicts(items: list[Any], rows: np.ndarray, bad_row: np.ndarray) -> list[Any]:
    if set(map(type, items)) <= {dict}:
        return items
    odd = np.fromiter((type(x) is not dict for x in items), dtype=bool, count=len(items))
    bad_row[rows[odd]] = True
    return [x if type(x) is dict else _EMPTY for x in items]


def _int_labels(labels: list[Any], rows: np.ndarray, bad_row: np.ndarray) -> np.ndarray:
    if set(map(type, labels)) <= _INT_TYPES:
        try:
            return np.array(labels, dtype=np.int64)
        except OverflowError:
            pass
    ok = [type(x) is int and -LABEL_BOUND < x < LABEL_BOUND for x in labels]
    bad_row[rows[~np.array(ok, dtype=bool)]] = True
    return np.array([x if good else 0 for x, good in zip(labels, ok, strict=True)], dtype=np.int64)


def _float_scores(scores: list[Any], rows: np.ndarray, bad_row: np.ndarray) -> np.ndarray:
    arr: np.ndarray | None = None
    types = set(map(type, scores))
    if types <= _SCORE_TYPES:
        try:
            arr = np.array(scores, dtype=np.float64)
        except (OverflowError, TypeError, ValueError):
            arr = None
    if arr is None:
        ok = np.fromiter((type(x) in _SCORE_TYPES for x in scores), dtype=bool, count=len(scores))
        bad_row[rows[~ok]] = True
        arr = np.array([_to_float(x) if good else 0.0 for x, good in zip(scores, ok, strict=True)], dtype=np.float64)
    # NaN sorts unpredictably and big ints lose precision as floats: the one-query path does those rows
    odd = np.isnan(arr)
    if int in types or (arr.size and float(np.max(np.abs(arr), initial=0.0)) > EXACT_INT):
        odd |= np.abs(arr) > EXACT_INT
    if odd.any():
        bad_row[rows[odd]] = True
        arr = np.where(odd, 0.0, arr)
    return arr


def _to_float(x: Any) -> float:
    try:
        return float(x)
    except OverflowError:
        return float("nan")


def _hash_codes(ids: list[Any], rows: np.ndarray, bad_row: np.ndarray) -> np.ndarray:
    """Python ``hash`` of each id (equal ids hash equal); rows with an unhashable or ``None`` id are flagged.

    ``None`` is found by its hash (an id that merely shares it is flagged too: harmless, that row goes slow).
    Equal hashes of *different* ids are caught later by ``_verify`` (the row then takes the one-query path).
    """
    try:
        codes = np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))
    except TypeError:  # an unhashable id somewhere
        hashable = np.fromiter((_hashable(x) for x in ids), dtype=bool, count=len(ids))
        bad_row[rows[~hashable]] = True
        codes = np.array([hash(x) if ok else 0 for x, ok in zip(ids, hashable, strict=True)], dtype=np.int64)
    bad_row[rows[codes == hash(None)]] = True
    return codes


def _verify(
    a_ids: list[Any], a: np.ndarray, b_ids: list[Any], b: np.ndarray, rows: np.ndarray, mismatch: np.ndarray
) -> None:
    """Flag rows where ids paired by hash differ (a hash collision, or NaN ids): C-level ``map`` over the pairs."""
    if len(a) == 0:
        return
    differ = np.fromiter(
        map(operator.ne, map(a_ids.__getitem__, a.tolist()), map(b_ids.__getitem__, b.tolist())),
        dtype=bool,
        count=len(a),
    )
    mismatch[rows[differ]] = True


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


@dataclass
class _Flat:
    """A batch flattened to item arrays (rows contiguous, in row order)."""

    m: int
    bad_row: np.ndarray  # rows the one-query path must do (odd types, out-of-range labels, NaN scores, ...)
    g_len: np.ndarray
    r_len: np.ndarray
    g_row: np.ndarray
    g_code: np.ndarray  # equal ids have equal codes (hashes, or dictionary indices)
    g_lab: np.ndarray
    r_row: np.ndarray
    r_code: np.ndarray
    r_score: np.ndarray
    ids: tuple[list[Any], list[Any]] | None = None  # Python ids behind hash codes: equality is then verified


def _evaluate_lists(
    gts: list[list[Any]], rets: list[list[Any]], cfg: _dr.Config
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Flatten the rows, check item types per column, then run the array engines."""
    m = len(gts)
    bad_row = np.zeros(m, dtype=bool)
    g_len = np.fromiter(map(len, gts), dtype=np.int64, count=m)
    r_len = np.fromiter(map(len, rets), dtype=np.int64, count=m)
    g_row = np.repeat(np.arange(m, dtype=np.int64), g_len)
    r_row = np.repeat(np.arange(m, dtype=np.int64), r_len)
    g_items = _items_are_dicts(list(chain.from_iterable(gts)), g_row, bad_row)
    r_items = _items_are_dicts(list(chain.from_iterable(rets)), r_row, bad_row)
    labels = _int_labels(list(map(dict.get, g_items, repeat("query_relevance_label"))), g_row, bad_row)
    scores = _float_scores(list(map(dict.get, r_items, repeat("relevance_score"))), r_row, bad_row)
    ids = list(map(dict.get, g_items, repeat("document_id")))
    ids.extend(map(dict.get, r_items, repeat("document_id")))
    codes, verify = _id_codes(ids, np.concatenate([g_row, r_row]), bad_row)
    n_g = len(g_items)
    check = (ids[:n_g], ids[n_g:]) if verify else None
    flat = _Flat(m, bad_row, g_len, r_len, g_row, codes[:n_g], labels, r_row, codes[n_g:], scores, check)
    return _run(flat, cfg)


def _id_codes(ids: list[Any], rows: np.ndarray, bad_row: np.ndarray) -> tuple[np.ndarray, bool]:
    """Codes for the ids of one chunk: equal codes <=> equal ids under the library's dict semantics
    (1 == 1.0 == True, "1" != 1). One small dict per chunk (cache-resident); ``None`` ids flag their rows.

    Falls back to hash codes (then verified pairwise, second value True) when an id is unhashable.
    """
    code_of: dict[Any, int] = {}
    try:
        codes = np.fromiter(map(code_of.setdefault, ids, count()), dtype=np.int64, count=len(ids))
    except TypeError:
        return _hash_codes(ids, rows, bad_row), True
    if None in code_of:
        bad_row[rows[codes == code_of[None]]] = True
    return codes, False


def evaluate_columns(
    g_len: np.ndarray,
    g_code: np.ndarray,
    g_lab: np.ndarray,
    r_len: np.ndarray,
    r_code: np.ndarray,
    r_score: np.ndarray,
    cfg: _dr.Config,
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The engines on already columnar data (e.g. from pyarrow): lengths per row, flat codes, labels and scores.

    Codes must be exact (equal code <=> equal id), e.g. dictionary indices. Returns the nine values per row and a
    mask of the rows done; the caller re-runs the others through the one-query path with the original objects.
    """
    m = len(g_len)
    bad_row = np.zeros(m, dtype=bool)
    g_row = np.repeat(np.arange(m, dtype=np.int64), g_len)
    r_row = np.repeat(np.arange(m, dtype=np.int64), r_len)
    bad_row[(g_len == 0) | (g_len > _dr.MAX_ITEMS) | (r_len > _dr.MAX_ITEMS)] = True
    odd = np.isnan(r_score) | (np.abs(r_score) > EXACT_INT)
    bad_row[r_row[odd]] = True
    r_score = np.where(odd, 0.0, r_score)
    flat = _Flat(m, bad_row, g_len, r_len, g_row, g_code, g_lab, r_row, r_code, r_score)
    return _run(flat, cfg)


@dataclass
class _Parts:
    """What an engine hands to the shared arithmetic, one entry per row (rows it did not handle stay 0)."""

    t: np.ndarray  # (m, 3) labels of the top 3 retrieved, 0-padded
    present: np.ndarray  # (m, 3) whether that rank exists
    it: np.ndarray  # (m, 3) top 3 ideal labels, 0-padded
    holes: np.ndarray
    normal: np.ndarray  # some retrieved label is non-zero
    mismatch: np.ndarray  # ids paired by code are not equal: one-query path
    found: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # (rows, labels) of retrieved docs
    ideal: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # and of ground truth, fidelity counts

    @classmethod
    def zeros(cls, m: int) -> _Parts:
        i3, b = np.zeros((m, 3), dtype=np.int64), np.zeros(m, dtype=bool)
        return cls(i3, np.zeros((m, 3), dtype=bool), i3.copy(), np.zeros(m, dtype=np.int64), b, b.copy())


#: Rows with at most this many items in each list use the padded-matrix engine; longer rows the sort engine.
SHORT_ROW = 32
_MATRIX_CELLS = 250000


def _run(flat: _Flat, cfg: _dr.Config) -> tuple[list[dict[str, Any]], np.ndarray]:
    parts = _Parts.zeros(flat.m)
    flat.bad_row[flat.g_row[(flat.g_lab < cfg.lo) | (flat.g_lab > cfg.hi)]] = True  # the library rejects them
    todo = ~flat.bad_row
    short = todo & (flat.g_len <= SHORT_ROW) & (flat.r_len <= SHORT_ROW)
    if short.any():
        _matrix_engine(flat, short, cfg, parts)
    if (todo & ~short).any():
        _sort_engine(flat, todo & ~short, cfg, parts)
    return _finish(flat, parts, cfg)


def _select(rows: np.ndarray, mask_rows: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask_rows[rows])


class _Padded(NamedTuple):
    """Rows padded to ``(rows × width)`` matrices: ``h`` id codes, ``gl`` labels, ``rs`` scores, ``v`` which cells
    hold an item, ``x`` each cell's flat item index (for the id check; the codes when no check is needed)."""

    rows: np.ndarray  # the batch row of each matrix row
    gh: np.ndarray
    gl: np.ndarray
    gv: np.ndarray
    gx: np.ndarray
    rh: np.ndarray
    rs: np.ndarray
    rv: np.ndarray
    rx: np.ndarray

    def block(self, a: int, b: int) -> _Padded:
        return _Padded(*(column[a:b] for column in self))


def _pad(flat: _Flat, rows_mask: np.ndarray) -> _Padded:
    """The rows of ``rows_mask`` as padded matrices (ground truth at least 1 wide, retrieved at least 3)."""
    sel_rows = np.flatnonzero(rows_mask)
    n = len(sel_rows)
    local = np.full(flat.m, -1, dtype=np.int64)
    local[sel_rows] = np.arange(n)

    def matrix(item_rows: np.ndarray, lens: np.ndarray, width: int, values: np.ndarray, fill: Any) -> np.ndarray:
        at_row = local[item_rows]
        start = np.cumsum(lens[sel_rows]) - lens[sel_rows]
        out = np.full((n, width), fill, dtype=values.dtype)
        out[at_row, np.arange(len(item_rows)) - start[at_row]] = values
        return out

    gi, ri = _select(flat.g_row, rows_mask), _select(flat.r_row, rows_mask)
    lg = max(int(flat.g_len[sel_rows].max()), 1)
    lr = max(int(flat.r_len[sel_rows].max()), 3)
    g_rows, r_rows = flat.g_row[gi], flat.r_row[ri]
    gh = matrix(g_rows, flat.g_len, lg, flat.g_code[gi], 0)
    rh = matrix(r_rows, flat.r_len, lr, flat.r_code[ri], 0)
    checking = flat.ids is not None
    return _Padded(
        sel_rows,
        gh,
        matrix(g_rows, flat.g_len, lg, flat.g_lab[gi], 0),
        np.arange(lg) < flat.g_len[sel_rows][:, None],
        matrix(g_rows, flat.g_len, lg, gi, -1) if checking else gh,
        rh,
        matrix(r_rows, flat.r_len, lr, flat.r_score[ri], 0.0),
        np.arange(lr) < flat.r_len[sel_rows][:, None],
        matrix(r_rows, flat.r_len, lr, ri, -1) if checking else rh,
    )


class _Match(NamedTuple):
    """One block de-duplicated and matched: ``keep_g`` = the last occurrence of each ground-truth id; ``first_r`` =
    the first occurrence of each retrieved id (it ranks), ranked with ``score`` (its id's last score); ``found`` =
    ranked items with a ground-truth match at column ``g_at``; ``label`` = their label (a hole is 0); ``g_pairs``,
    ``r_pairs`` = the pairs of cells with equal codes (``None``: no duplicates), for the id check."""

    keep_g: np.ndarray
    first_r: np.ndarray
    score: np.ndarray
    found: np.ndarray
    g_at: np.ndarray
    label: np.ndarray
    g_pairs: np.ndarray | None
    r_pairs: np.ndarray | None


def _match(blk: _Padded) -> _Match:
    lg, lr = blk.gh.shape[1], blk.rh.shape[1]
    eq_g = (blk.gh[:, :, None] == blk.gh[:, None, :]) & blk.gv[:, :, None] & blk.gv[:, None, :]
    eq_g &= np.triu(np.ones((lg, lg), dtype=bool), 1)
    g_dups = bool(eq_g.any())
    keep_g = blk.gv & ~eq_g.any(axis=2) if g_dups else blk.gv
    eq_r = (blk.rh[:, :, None] == blk.rh[:, None, :]) & blk.rv[:, :, None] & blk.rv[:, None, :]
    earlier_r = np.tril(np.ones((lr, lr), dtype=bool), -1)
    dup_r = eq_r & earlier_r
    r_dups = bool(dup_r.any())
    if r_dups:
        first_r = blk.rv & ~dup_r.any(axis=2)
        last_at = np.where(eq_r, np.arange(lr), -1).max(axis=2).clip(0)
        score = np.take_along_axis(blk.rs, last_at, axis=1)
    else:
        first_r, score = blk.rv, blk.rs
    match = (blk.rh[:, :, None] == blk.gh[:, None, :]) & keep_g[:, None, :]
    found = match.any(axis=2) & first_r
    g_at = match.argmax(axis=2)
    label = np.where(found, np.take_along_axis(blk.gl, g_at, axis=1), 0)
    r_pairs = eq_r & ~earlier_r & ~np.eye(lr, dtype=bool) if r_dups else None
    return _Match(keep_g, first_r, score, found, g_at, label, eq_g if g_dups else None, r_pairs)


def _verify_block(ids: tuple[list[Any], list[Any]], blk: _Padded, mt: _Match, mismatch: np.ndarray) -> None:
    """Equal codes must be equal ids (hash codes): check every duplicate pair and every match."""
    g_ids, r_ids = ids
    if mt.g_pairs is not None:
        k, i, j = np.nonzero(mt.g_pairs)
        _verify(g_ids, blk.gx[k, i], g_ids, blk.gx[k, j], blk.rows[k], mismatch)
    if mt.r_pairs is not None:
        k, i, j = np.nonzero(mt.r_pairs)
        _verify(r_ids, blk.rx[k, i], r_ids, blk.rx[k, j], blk.rows[k], mismatch)
    k, i = np.nonzero(mt.found)
    _verify(r_ids, blk.rx[k, i], g_ids, blk.gx[k, mt.g_at[k, i]], blk.rows[k], mismatch)


def _store_block(blk: _Padded, mt: _Match, start_rank: int, parts: _Parts) -> None:
    """Holes, the top 3 (ranked by score, ties in first-occurrence order), the ideal top 3 and the fidelity
    counts of one block into ``parts``."""
    rows, first_r, label, keep_g = blk.rows, mt.first_r, mt.label, mt.keep_g
    parts.holes[rows] = (first_r & ~mt.found).sum(axis=1)
    parts.normal[rows] = (first_r & (label != 0)).any(axis=1)
    order = np.lexsort((-mt.score, ~first_r), axis=-1)[:, :3]
    present = np.arange(3) < first_r.sum(axis=1)[:, None]
    parts.present[rows] = present
    parts.t[rows] = np.where(present, np.take_along_axis(label, order, axis=1), 0)
    ideal = -np.sort(np.where(keep_g, -blk.gl, np.iinfo(np.int64).max), axis=1)[:, :3]
    ideal = ideal if ideal.shape[1] == 3 else np.pad(ideal, ((0, 0), (0, 3 - ideal.shape[1])))
    parts.it[rows] = np.where(np.arange(3) < keep_g.sum(axis=1)[:, None], ideal, 0)
    k, i = np.nonzero(first_r & (label >= start_rank))
    parts.found.append((rows[k], label[k, i]))
    k, i = np.nonzero(keep_g & (blk.gl >= start_rank))
    parts.ideal.append((rows[k], blk.gl[k, i]))


def _matrix_engine(flat: _Flat, rows_mask: np.ndarray, cfg: _dr.Config, parts: _Parts) -> None:
    """Rows padded into (rows, width) matrices; duplicates and matches by broadcast comparison, in blocks of
    about ``_MATRIX_CELLS`` cells per comparison matrix."""
    padded = _pad(flat, rows_mask)
    n, width = len(padded.rows), max(padded.gh.shape[1], padded.rh.shape[1])
    step = max(1, _MATRIX_CELLS // (width**2))
    for a in range(0, n, step):
        blk = padded.block(a, min(n, a + step))
        mt = _match(blk)
        if flat.ids is not None:
            _verify_block(flat.ids, blk, mt, parts.mismatch)
        _store_block(blk, mt, cfg.lo + 1, parts)


def _sort_engine(flat: _Flat, rows_mask: np.ndarray, cfg: _dr.Config, parts: _Parts) -> None:
    """Any row length: de-duplicate and match through sorted ``row * width + code`` keys."""
    m = flat.m
    g_item = _select(flat.g_row, rows_mask)
    r_item = _select(flat.r_row, rows_mask)
    g_row, g_lab = flat.g_row[g_item], flat.g_lab[g_item]
    r_row, r_score = flat.r_row[r_item], flat.r_score[r_item]
    codes = np.unique(np.concatenate([flat.g_code[g_item], flat.r_code[r_item]]), return_inverse=True)[1].ravel()
    width = max(len(codes), 1)
    gkey = g_row * width + codes[: len(g_item)]
    rkey = r_row * width + codes[len(g_item) :]

    # ground truth: one label per (row, id), the last one given
    g_order = np.argsort(gkey, kind="stable")
    g_sorted = gkey[g_order]
    _, last = _first_last(g_sorted)
    ug_key, ug_idx = g_sorted[last], g_order[last]
    ug_row, ug_lab = g_row[ug_idx], g_lab[ug_idx]

    # retrieved: one score per (row, id), the last one given, ranked at its first position
    r_order = np.argsort(rkey, kind="stable")
    r_sorted = rkey[r_order]
    first, last = _first_last(r_sorted)
    ur_key, first_pos = r_sorted[first], r_order[first]
    ur_row, ur_score = r_row[first_pos], r_score[r_order[last]]
    n_ug = len(ug_key)
    at = np.minimum(np.searchsorted(ug_key, ur_key), max(n_ug - 1, 0))
    found = (ug_key[at] == ur_key) if n_ug else np.zeros(len(ur_key), dtype=bool)
    ur_lab = np.where(found, ug_lab[at] if n_ug else 0, 0)  # a hole is label 0

    if flat.ids is not None:  # equal codes must be equal ids, as in the library's dicts; else the row goes slow
        g_ids, r_ids = flat.ids
        dup = np.flatnonzero(g_sorted[1:] == g_sorted[:-1])
        _verify(g_ids, g_item[g_order[dup]], g_ids, g_item[g_order[dup + 1]], g_row[g_order[dup]], parts.mismatch)
        dup = np.flatnonzero(r_sorted[1:] == r_sorted[:-1])
        _verify(r_ids, r_item[r_order[dup]], r_ids, r_item[r_order[dup + 1]], r_row[r_order[dup]], parts.mismatch)
        hit = np.flatnonzero(found)
        _verify(r_ids, r_item[first_pos[hit]], g_ids, g_item[ug_idx[at[hit]]], ur_row[hit], parts.mismatch)

    rows = np.flatnonzero(rows_mask)
    parts.holes[rows] = np.bincount(ur_row[~found], minlength=m)[rows]
    nz = ur_row[ur_lab != 0]
    parts.normal[nz] = True
    ranked = np.lexsort((first_pos, -ur_score, ur_row))
    t, present = _top3(ur_row[ranked], ur_lab[ranked], m)
    parts.t[rows], parts.present[rows] = t[rows], present[rows]
    ideal = np.lexsort((-ug_lab, ug_row))
    it, _ = _top3(ug_row[ideal], ug_lab[ideal], m)
    parts.it[rows] = it[rows]
    start = cfg.lo + 1
    counted = ur_lab >= start
    parts.found.append((ur_row[counted], ur_lab[counted]))
    counted = ug_lab >= start
    parts.ideal.append((ug_row[counted], ug_lab[counted]))


def _first_last(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the first and of the last element of each run of equal keys."""
    diff = sorted_keys[1:] != sorted_keys[:-1]
    edge = np.ones(min(len(sorted_keys), 1), dtype=bool)
    return np.concatenate((edge, diff)), np.concatenate((diff, edge))


def _top3(rows: np.ndarray, labels: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows already grouped and ordered: first three labels per row (0-padded) and their presence mask."""
    count = np.bincount(rows, minlength=m)
    start = np.cumsum(count) - count
    rank = np.arange(len(rows)) - start[rows]
    top = rank < 3
    t = np.zeros((m, 3), dtype=np.int64)
    present = np.zeros((m, 3), dtype=bool)
    t[rows[top], rank[top]] = labels[top]
    present[rows[top], rank[top]] = True
    return t, present


def _dcg(t: np.ndarray) -> np.ndarray:
    """DCG@3 summed in the library's order; padded ranks have gain 0 and add exactly nothing."""
    gain = np.ldexp(1.0, t.astype(np.int32)) - 1.0
    return (gain[:, 0] / _dr.LOG2[0] + gain[:, 1] / _dr.LOG2[1]) + gain[:, 2] / _dr.LOG2[2]


def _weighted(
    rows: np.ndarray, labels: np.ndarray, m: int, start: int, rank_of: np.ndarray, w: np.ndarray
) -> np.ndarray:
    """Per-row fidelity weight sums, added in the library's order (labels sorted as strings)."""
    acc = np.zeros(m, dtype=np.float64)
    if len(rows) == 0:
        return acc
    width = len(w)
    key = rows * width + rank_of[labels - start]
    if m * width <= 20_000_000:  # a count matrix, then one column per label string, in string order
        counts = np.bincount(key, minlength=m * width).reshape(m, width)
        for j in range(width):
            acc += counts[:, j] * w[j]
        return acc
    uk, counts = np.unique(key, return_counts=True)
    u_row, u_rank = uk // width, uk % width
    terms = counts * w[u_rank]
    per_row = np.bincount(u_row, minlength=m)
    pos = np.arange(len(uk)) - (np.cumsum(per_row) - per_row)[u_row]
    order = np.argsort(pos, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(pos))])
    for j in range(len(bounds) - 1):  # one step per label *value*, vectorized over rows
        sel = order[bounds[j] : bounds[j + 1]]
        acc[u_row[sel]] += terms[sel]
    return acc


@lru_cache(maxsize=64)
def _rank_table(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(string rank of label v at index v - (lo+1), weight of the j-th string) for the numpy path."""
    table = _dr.weight_table(lo, hi)  # raises for ranges the library overflows on
    strings = list(table)  # already in string order
    rank_of = np.empty(len(strings), dtype=np.int64)
    rank_of[np.array([int(s) - (lo + 1) for s in strings], dtype=np.int64)] = np.arange(len(strings))
    return rank_of, np.array(list(table.values()), dtype=np.float64)


def _finish(flat: _Flat, parts: _Parts, cfg: _dr.Config) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The arithmetic shared by both engines, then Python values with the library's types per branch."""
    m, lo, hi = flat.m, int(cfg.lo), int(cfg.hi)
    t, it, present, normal = parts.t, parts.it, parts.present, parts.normal
    crash = np.zeros(m, dtype=bool)
    with np.errstate(all="ignore"):
        dcg = _dcg(t)
        idcg = _dcg(it)
        crash |= normal & (idcg == 0)  # the library divides by zero
        ndcg = dcg / idcg
        x = (25 * t).astype(np.float64)
        disc = _dr.XDCG_DISCOUNT
        xdcg = ((x[:, 0] * disc[0] + x[:, 1] * disc[1]) + x[:, 2] * disc[2]) / _dr.XDCG_DENOMINATOR
        top3 = np.where(present, t, np.iinfo(np.int64).min).max(axis=1)
        ratio = parts.holes / np.maximum(flat.r_len, 1).astype(np.float64)
        start = lo + 1
        tables: tuple[np.ndarray, np.ndarray] | None
        try:
            tables = _rank_table(lo, hi)
        except _dr.DocumentRetrievalError:  # weights overflow (max >= 1023) or range too wide
            tables = None
        if tables is None:
            crash |= normal
            fidelity = np.zeros(m)
        else:
            rank_of, w = tables
            f_rows, f_labels = _cat(parts.found)
            outside = f_labels > hi  # a hole (label 0) above a negative maximum: KeyError in the library
            crash[f_rows[outside]] = True
            f_rows, f_labels = f_rows[~outside], f_labels[~outside]
            w_found = _weighted(f_rows, f_labels, m, start, rank_of, w)
            w_ideal = _weighted(*_cat(parts.ideal), m, start, rank_of, w)
            fidelity = np.where(w_ideal == 0, np.nan, w_found / np.where(w_ideal == 0, 1.0, w_ideal))
    crash &= normal

    return _build_results(flat, parts, cfg, (ndcg, xdcg, fidelity, t[:, 0], top3), ratio), ~(
        flat.bad_row | crash | parts.mismatch
    )


def _typed_columns(
    flat: _Flat, parts: _Parts, first5: tuple[np.ndarray, ...], ratio: np.ndarray
) -> tuple[list[np.ndarray], list[list[Any]]]:
    """The nine metrics per row as numbers (for the verdicts) and as the library's Python values per branch:
    normal floats/ints, zero-branch (nothing relevant retrieved) int 0, empty-branch (nothing retrieved) 0.0 and
    holes_ratio int 0."""
    empty = flat.r_len == 0
    zero = ~parts.normal & ~empty
    numeric: list[np.ndarray] = []
    values: list[list[Any]] = []
    for arr in first5:
        col = arr.astype(object)
        col[zero] = 0
        col[empty] = 0.0
        numeric.append(np.where(zero | empty, 0, arr))
        values.append(col.tolist())
    ratio_obj = ratio.astype(object)
    ratio_obj[empty] = 0
    numeric += [parts.holes, np.where(empty, 0.0, ratio), flat.r_len, flat.g_len]
    values += [parts.holes.tolist(), ratio_obj.tolist(), flat.r_len.tolist(), flat.g_len.tolist()]
    return numeric, values


def _verdict_codes(numeric: list[np.ndarray], cfg: _dr.Config) -> np.ndarray:
    """Bit j of a row's code: metric j passes (``wire.passes``; thresholds are plain numbers here, so numpy
    compares as Python)."""
    code = np.zeros(len(numeric[0]), dtype=np.int64)
    with np.errstate(invalid="ignore"):
        for j, (num, thr, higher) in enumerate(zip(numeric, cfg.thresholds, _dr.HIGHER_IS_BETTER, strict=True)):
            code |= passes(num, thr, higher).astype(np.int64) << j
    return code


def _templates(codes: set[int], cfg: _dr.Config) -> tuple[dict[int, Any], dict[bool, Any]]:
    """``copy`` of a properties dict per verdict code and of an envelope per envelope verdict, keys already in the
    library's order: a row is then a dict copy plus its values, much cheaper than building 45 entries."""
    base = _dr.result_dict((0.0, 0.0, 0.0, 0, 0, 0, 0.0, 0, 0), cfg)
    base_props = base.pop("document_retrieval_properties")
    props_copy = {}
    for code in codes:
        props = dict(base_props)
        for j, metric in enumerate(_dr.METRICS):
            ok = bool(code >> j & 1)
            props[metric + "_result"] = "pass" if ok else "fail"
            props[metric + "_passed"] = ok
        props_copy[code] = props.copy
    env_copy = {}
    for ok in (False, True):
        env = dict(base)
        env["document_retrieval_passed"] = ok
        env["document_retrieval_result"] = "pass" if ok else "fail"
        env_copy[ok] = env.copy
    return props_copy, env_copy


def _build_results(
    flat: _Flat, parts: _Parts, cfg: _dr.Config, first5: tuple[np.ndarray, ...], ratio: np.ndarray
) -> list[dict[str, Any]]:
    """The 1.18 output dicts, the verdicts compared in numpy, the values typed per branch as in the library."""
    numeric, values = _typed_columns(flat, parts, first5, ratio)
    codes = _verdict_codes(numeric, cfg).tolist()
    score = numeric[0].astype(np.float64)
    with np.errstate(invalid="ignore"):
        env_passed = passes(score, cfg.primary)
    props_copy, env_copy = _templates(set(codes), cfg)
    out: list[dict[str, Any]] = []
    append = out.append
    for nd, xd, fi, t1, t3, ho, hr, nr, ng, code, sc, ep in zip(
        *values, codes, score.tolist(), env_passed.tolist(), strict=True
    ):
        p = props_copy[code]()
        p["ndcg@3"] = nd
        p["xdcg@3"] = xd
        p["fidelity"] = fi
        p["top1_relevance"] = t1
        p["top3_max_relevance"] = t3
        p["holes"] = ho
        p["holes_ratio"] = hr
        p["total_retrieved_documents"] = nr
        p["total_ground_truth_documents"] = ng
        e = env_copy[ep]()
        e["document_retrieval"] = sc
        e["document_retrieval_score"] = sc
        e["document_retrieval_properties"] = p
        append(e)
    return out


def _cat(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The engines' (rows, labels) pairs joined."""
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate([rows for rows, _ in pairs]), np.concatenate([labels for _, labels in pairs])
