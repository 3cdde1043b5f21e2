"""GGML's K-quant super-block types in numpy, written from the format description (GGML's
ggml-common.h block structs and the element order of its dequantize_row_q*_K), independent of
the C++ engine.

Every type packs QK_K = 256 elements into sub-blocks, each with a small integer scale (and a
minimum) that multiplies the super-block's fp16 d (and dmin):

  Q2_K  84 B: scales[16] (low nibble scale, high nibble min, 16-element sub-blocks), qs[64]
              (2-bit), fp16 d, fp16 dmin; value = d*scale*q - dmin*min, q in 0..3
  Q3_K 110 B: hmask[32], qs[64] (low 2 bits), scales[12] (16 6-bit scales stored +32), fp16 d;
              value = d*(scale-32)*q, q = low2 - (hmask bit ? 0 : 4) in -4..3
  Q4_K 144 B: fp16 d, fp16 dmin, scales[12] (8 6-bit scales + 8 6-bit mins, 32-element
              sub-blocks), qs[128] (4-bit); value = d*scale*q - dmin*min, q in 0..15
  Q5_K 176 B: as Q4_K plus qh[32] (fifth bits); q in 0..31
  Q6_K 210 B: ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16] (16-element
              sub-blocks), fp16 d; value = d*scale*(q-32), q in 0..63

Bit positions (e = element index in the super-block):
  Q2_K/Q3_K qs: bits 2j..2j+1 of qs[32h + l] for e = 128h + 32j + l
  Q3_K hmask:   bit e // 32 of hmask[e % 32]
  Q3_K scales:  scale i: low nibble of scales[i % 8] (i < 8) or its high nibble (i >= 8),
                high 2 bits at bit 2(i // 4) of scales[8 + i % 4]
  Q4_K/Q5_K scales: sub-block j < 4: scale = s[j] & 63, min = s[j+4] & 63; j >= 4: scale =
                s[j+4] & 15 | (s[j-4] >> 6) << 4, min = s[j+4] >> 4 | (s[j] >> 6) << 4
  Q4_K/Q5_K qs: qs[32c + l] low nibble = element 64c + l, high nibble = element 64c + 32 + l
  Q5_K qh:      bit 2c of qh[l] -> element 64c + l, bit 2c+1 -> element 64c + 32 + l
  Q6_K:         in half h (ql + 64h, qh + 32h), l < 32: element 128h + l + 32k (k = 0..3) has
                low nibble of ql[l + 32(k % 2)] (k < 2 low, k >= 2 high nibble) and bits
                2k..2k+1 of qh[l] as its top bits

GGML dequantises in float32: dl = d*scale, ml = dmin*min (exact), then dl*q - ml, each rounded
to float32; Q6_K computes (d*scale)*q. The dequantisers below do the same in float32.

The quantisers are a plain least-squares search (not llama.cpp's x^2-weighted one): per
sub-block, 21 candidate inverse scales between levels-1 and levels+1 steps over the range, each
followed by a least-squares fit of scale (and offset <= 0) to its rounded quants; the fit with
the smallest squared error (of those quants, from the sums) wins, against the range-filling
scale's error. The sub-block scales (mins) are then rounded against the
super-block's fp16 d (dmin) = largest / 63 (Q2_K: 15; Q3_K: value of largest magnitude / -32;
Q6_K: / -128) and the quants recomputed with the scales as stored.
"""
import numpy as np

QK_K = 256
_F32 = np.float32

BLOCK_BYTES = {"Q2_K": 84, "Q3_K": 110, "Q4_K": 144, "Q5_K": 176, "Q6_K": 210}

_Q2_K = np.dtype([("scales", "u1", 16), ("qs", "u1", 64), ("d", "<f2"), ("dmin", "<f2")])
_Q3_K = np.dtype([("hmask", "u1", 32), ("qs", "u1", 64), ("scales", "u1", 12), ("d", "<f2")])
_Q4_K = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)])
_Q5_K = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qh", "u1", 32),
                  ("qs", "u1", 128)])
_Q6_K = np.dtype([("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", "<f2")])

_E = np.arange(QK_K)
# Q2_K / Q3_K: byte and shift of each element's 2 bits.
_TWO_BIT_BYTE = 32 * (_E // 128) + _E % 32
_TWO_BIT_SHIFT = 2 * ((_E % 128) // 32)
# Q4_K / Q5_K: byte and nibble of each element (chunk c of 64, l < 32 low, >= 32 high).
_NIBBLE_BYTE = 32 * (_E // 64) + _E % 32
_NIBBLE_SHIFT = 4 * ((_E % 64) // 32)
_Q5_BIT = _E // 32  # bit of qh[e % 32]: 2c for the low half of chunk c, 2c + 1 for the high
# Q6_K: element 128h + 32k + l.
_H, _K, _L = _E // 128, (_E % 128) // 32, _E % 32
_Q6_LOW_BYTE = 64 * _H + _L + 32 * (_K % 2)
_Q6_LOW_SHIFT = 4 * (_K // 2)
_Q6_HIGH_BYTE = 32 * _H + _L
_Q6_HIGH_SHIFT = 2 * _K


def _blocks(data: bytes, dtype: np.dtype, n: int) -> np.ndarray:
    if n % QK_K:
        raise ValueError(f"{n} elements is not a multiple of {QK_K}")
    return np.frombuffer(data, dtype=dtype, count=n // QK_K)


# --- scale packing ------------------------------------------------------------------------

def _unpack_scale_min(s: np.ndarray):
    """(blocks, 12) packed bytes -> (blocks, 8) scales, (blocks, 8) mins."""
    s = s.astype(np.int32)
    scale = np.empty((s.shape[0], 8), np.int32)
    mins = np.empty((s.shape[0], 8), np.int32)
    scale[:, :4] = s[:, 0:4] & 63
    mins[:, :4] = s[:, 4:8] & 63
    scale[:, 4:] = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)
    mins[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return scale, mins


def _pack_scale_min(scale: np.ndarray, mins: np.ndarray) -> np.ndarray:
    out = np.zeros((scale.shape[0], 12), np.int32)
    out[:, 0:4] = scale[:, :4] | ((scale[:, 4:] >> 4) << 6)
    out[:, 4:8] = mins[:, :4] | ((mins[:, 4:] >> 4) << 6)
    out[:, 8:12] = (scale[:, 4:] & 0x0F) | ((mins[:, 4:] & 0x0F) << 4)
    return out.astype(np.uint8)


def _unpack_q3_scales(s: np.ndarray) -> np.ndarray:
    """(blocks, 12) -> (blocks, 16) signed scales."""
    s = s.astype(np.int32)
    i = np.arange(16)
    low = np.where(i < 8, s[:, i % 8] & 0x0F, s[:, i % 8] >> 4)
    high = (s[:, 8 + i % 4] >> (2 * (i // 4))) & 3
    return (low | (high << 4)) - 32


def _pack_q3_scales(scale: np.ndarray) -> np.ndarray:
    stored = scale + 32
    out = np.zeros((scale.shape[0], 12), np.int32)
    for i in range(16):
        out[:, i % 8] |= (stored[:, i] & 0x0F) << (0 if i < 8 else 4)
        out[:, 8 + i % 4] |= (stored[:, i] >> 4) << (2 * (i // 4))
    return out.astype(np.uint8)


def _pack_bits(values: np.ndarray, byte: np.ndarray, shift: np.ndarray, n_bytes: int):
    """OR values[:, e] << shift[e] into byte[e] of (blocks, n_bytes)."""
    out = np.zeros((values.shape[0], n_bytes), np.int64)
    for e in range(QK_K):
        out[:, byte[e]] |= values[:, e].astype(np.int64) << shift[e]
    return out.astype(np.uint8)


# --- dequantisers -------------------------------------------------------------------------

def _per_element(sub: np.ndarray) -> np.ndarray:
    """(blocks, subs) -> (blocks, 256): each sub-block's value repeated over its elements."""
    return np.repeat(sub, QK_K // sub.shape[1], axis=1)


def dequantize(data: bytes, type_name: str, n: int) -> np.ndarray:
    """Float32 values of n elements stored as type_name ("Q2_K" .. "Q6_K")."""
    if type_name == "Q2_K":
        b = _blocks(data, _Q2_K, n)
        q = (b["qs"][:, _TWO_BIT_BYTE].astype(np.int32) >> _TWO_BIT_SHIFT) & 3
        d = b["d"].astype(_F32)[:, None]
        dmin = b["dmin"].astype(_F32)[:, None]
        dl = d * _per_element(b["scales"] & 0x0F).astype(_F32)
        ml = dmin * _per_element(b["scales"] >> 4).astype(_F32)
        return (dl * q.astype(_F32) - ml).reshape(-1)
    if type_name == "Q3_K":
        b = _blocks(data, _Q3_K, n)
        low = (b["qs"][:, _TWO_BIT_BYTE].astype(np.int32) >> _TWO_BIT_SHIFT) & 3
        high = (b["hmask"][:, _E % 32].astype(np.int32) >> (_E // 32)) & 1
        q = low - np.where(high == 1, 0, 4)
        dl = b["d"].astype(_F32)[:, None] * _per_element(_unpack_q3_scales(b["scales"])).astype(_F32)
        return (dl * q.astype(_F32)).reshape(-1)
    if type_name in ("Q4_K", "Q5_K"):
        b = _blocks(data, _Q4_K if type_name == "Q4_K" else _Q5_K, n)
        q = (b["qs"][:, _NIBBLE_BYTE].astype(np.int32) >> _NIBBLE_SHIFT) & 0x0F
        if type_name == "Q5_K":
            q = q | (((b["qh"][:, _E % 32].astype(np.int32) >> _Q5_BIT) & 1) << 4)
        scale, mins = _unpack_scale_min(b["scales"])
        dl = b["d"].astype(_F32)[:, None] * _per_element(scale).astype(_F32)
        ml = b["dmin"].astype(_F32)[:, None] * _per_element(mins).astype(_F32)
        return (dl * q.astype(_F32) - ml).reshape(-1)
    if type_name == "Q6_K":
        b = _blocks(data, _Q6_K, n)
        low = (b["ql"][:, _Q6_LOW_BYTE].astype(np.int32) >> _Q6_LOW_SHIFT) & 0x0F
        high = (b["qh"][:, _Q6_HIGH_BYTE].astype(np.int32) >> _Q6_HIGH_SHIFT) & 3
        q = (low | (high << 4)) - 32
        dl = b["d"].astype(_F32)[:, None] * _per_element(b["scales"]).astype(_F32)
        return (dl * q.astype(_F32)).reshape(-1)
    raise ValueError(f"not a K-quant type: {type_name}")


# --- quantisers ---------------------------------------------------------------------------

_GRID = 0.1 * np.arange(-10, 11)


def _requant_error(x, scale, offset, qmin, qmax):
    """Squared error per sub-block of x (subs, len) under x ~ scale*q + offset."""
    safe = np.where(scale == 0, 1.0, scale)
    q = np.clip(np.rint((x - offset[:, None]) / safe[:, None]), qmin, qmax)
    q = np.where(scale[:, None] == 0, np.clip(0, qmin, qmax), q)
    return ((scale[:, None] * q + offset[:, None] - x) ** 2).sum(axis=1)


def _fit_with_offset(x: np.ndarray, qmax: int):
    """Sub-blocks x (subs, len), float64 -> scale >= 0, offset <= 0 with q in 0..qmax."""
    n = x.shape[1]
    lo = np.minimum(x.min(axis=1), 0.0)
    hi = x.max(axis=1)
    span = hi - lo
    live = span > 0
    safe_span = np.where(live, span, 1.0)
    best_s = np.where(live, span / qmax, 0.0)
    best_o = lo.copy()
    best_e = _requant_error(x, best_s, best_o, 0, qmax)
    sx, sxx = x.sum(axis=1), (x * x).sum(axis=1)
    for g in _GRID:
        inverse = (qmax + g) / safe_span
        q = np.clip(np.rint((x - lo[:, None]) * inverse[:, None]), 0, qmax)
        sq, sqq = q.sum(axis=1), (q * q).sum(axis=1)
        sqx = (q * x).sum(axis=1)
        det = n * sqq - sq * sq
        ok = live & (det > 0)
        safe_det = np.where(ok, det, 1.0)
        s = (n * sqx - sq * sx) / safe_det
        o = (sx - s * sq) / n
        refit = o > 0
        s = np.where(refit, sqx / np.where(sqq > 0, sqq, 1.0), s)
        o = np.where(refit, 0.0, o)
        ok &= s > 0
        # The squared error of these quants under (s, o), from the sums.
        e = s * s * sqq + 2 * s * o * sq - 2 * s * sqx + n * o * o - 2 * o * sx + sxx
        better = ok & (e < best_e)
        best_s, best_o, best_e = (np.where(better, s, best_s), np.where(better, o, best_o),
                                  np.where(better, e, best_e))
    return best_s, best_o


def _signed_absmax(x: np.ndarray) -> np.ndarray:
    """Per row, the value of largest magnitude (the first one on ties)."""
    return x[np.arange(x.shape[0]), np.argmax(np.abs(x), axis=1)]


def _fit_symmetric(x: np.ndarray, qneg: int):
    """Sub-blocks x (subs, len) -> signed scale with q in -qneg..qneg-1."""
    m = _signed_absmax(x)
    live = m != 0
    safe_m = np.where(live, m, 1.0)
    zero = np.zeros(x.shape[0])
    best_s = np.where(live, m / -qneg, 0.0)
    best_e = _requant_error(x, best_s, zero, -qneg, qneg - 1)
    sxx = (x * x).sum(axis=1)
    for g in _GRID:
        inverse = -(qneg + g) / safe_m
        q = np.clip(np.rint(x * inverse[:, None]), -qneg, qneg - 1)
        sqq, sqx = (q * q).sum(axis=1), (q * x).sum(axis=1)
        ok = live & (sqq > 0)
        safe_sqq = np.where(sqq > 0, sqq, 1.0)
        s = np.where(ok, sqx / safe_sqq, 0.0)
        e = sxx - sqx * sqx / safe_sqq  # the squared error of these quants under s
        better = ok & (e < best_e)
        best_s, best_e = np.where(better, s, best_s), np.where(better, e, best_e)
    return best_s


def _fp16(v: np.ndarray) -> np.ndarray:
    return v.astype(_F32).astype("<f2")


def _rint_clip(v: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return np.clip(np.rint(np.nan_to_num(v, nan=lo)), lo, hi).astype(np.int32)


def _quantize_with_min(x: np.ndarray, subs: int, qmax: int, scale_max: int):
    """x (blocks, 256) -> d, dmin (fp16), scale, mins (blocks, subs), q (blocks, 256)."""
    blocks = x.shape[0]
    sub_x = x.reshape(blocks * subs, -1).astype(np.float64)
    s, o = _fit_with_offset(sub_x, qmax)
    s, o = s.reshape(blocks, subs), o.reshape(blocks, subs)
    d16 = _fp16(s.max(axis=1) / scale_max)
    dmin16 = _fp16((-o).max(axis=1) / scale_max)
    d = d16.astype(np.float64)[:, None]
    dmin = dmin16.astype(np.float64)[:, None]
    scale = np.where(d > 0, _rint_clip(s / np.where(d > 0, d, 1.0), 0, scale_max), 0)
    mins = np.where(dmin > 0, _rint_clip(-o / np.where(dmin > 0, dmin, 1.0), 0, scale_max), 0)
    # Quants against the scales as stored, computed in float32 as the dequantiser does.
    ds = (d16.astype(_F32)[:, None] * scale.astype(_F32)).astype(np.float64)
    dm = (dmin16.astype(_F32)[:, None] * mins.astype(_F32)).astype(np.float64)
    ds_e, dm_e = _per_element(ds), _per_element(dm)
    q = np.where(ds_e > 0, _rint_clip((x + dm_e) / np.where(ds_e > 0, ds_e, 1.0), 0, qmax), 0)
    return d16, dmin16, scale.astype(np.int32), mins.astype(np.int32), q


def _quantize_symmetric(x: np.ndarray, qneg: int, scale_neg: int):
    """x (blocks, 256) -> d (fp16), scale (blocks, 16), q (blocks, 256) in -qneg..qneg-1."""
    blocks = x.shape[0]
    s = _fit_symmetric(x.reshape(blocks * 16, 16).astype(np.float64), qneg).reshape(blocks, 16)
    d16 = _fp16(_signed_absmax(s) / -scale_neg)
    d = d16.astype(np.float64)[:, None]
    scale = np.where(d != 0, _rint_clip(s / np.where(d != 0, d, 1.0), -scale_neg,
                                        scale_neg - 1), 0).astype(np.int32)
    ds = _per_element((d16.astype(_F32)[:, None] * scale.astype(_F32)).astype(np.float64))
    q = np.where(ds != 0, _rint_clip(x / np.where(ds != 0, ds, 1.0), -qneg, qneg - 1), 0)
    return d16, scale, q.astype(np.int32)


def quantize(x: np.ndarray, type_name: str) -> bytes:
    """Encodes float values (a multiple of 256) as type_name ("Q2_K" .. "Q6_K")."""
    flat = np.ascontiguousarray(x, dtype=_F32).reshape(-1)
    if flat.size % QK_K:
        raise ValueError(f"{flat.size} elements is not a multiple of {QK_K}")
    x = flat.reshape(-1, QK_K).astype(np.float64)
    blocks = x.shape[0]
    if type_name == "Q2_K":
        d, dmin, scale, mins, q = _quantize_with_min(x, 16, 3, 15)
        out = np.zeros(blocks, _Q2_K)
        out["scales"] = (scale | (mins << 4)).astype(np.uint8)
        out["qs"] = _pack_bits(q, _TWO_BIT_BYTE, _TWO_BIT_SHIFT, 64)
        out["d"], out["dmin"] = d, dmin
        return out.tobytes()
    if type_name == "Q3_K":
        d, scale, q = _quantize_symmetric(x, 4, 32)
        stored = q + 4
        out = np.zeros(blocks, _Q3_K)
        out["hmask"] = _pack_bits(stored >> 2, _E % 32, _E // 32, 32)
        out["qs"] = _pack_bits(stored & 3, _TWO_BIT_BYTE, _TWO_BIT_SHIFT, 64)
        out["scales"] = _pack_q3_scales(scale)
        out["d"] = d
        return out.tobytes()
    if type_name in ("Q4_K", "Q5_K"):
        qmax = 15 if type_name == "Q4_K" else 31
        d, dmin, scale, mins, q = _quantize_with_min(x, 8, qmax, 63)
        out = np.zeros(blocks, _Q4_K if type_name == "Q4_K" else _Q5_K)
        out["d"], out["dmin"] = d, dmin
        out["scales"] = _pack_scale_min(scale, mins)
        out["qs"] = _pack_bits(q & 0x0F, _NIBBLE_BYTE, _NIBBLE_SHIFT, 128)
        if type_name == "Q5_K":
            out["qh"] = _pack_bits(q >> 4, _E % 32, _Q5_BIT, 32)
        return out.tobytes()
    if type_name == "Q6_K":
        d, scale, q = _quantize_symmetric(x, 32, 128)
        stored = q + 32
        out = np.zeros(blocks, _Q6_K)
        out["ql"] = _pack_bits(stored & 0x0F, _Q6_LOW_BYTE, _Q6_LOW_SHIFT, 128)
        out["qh"] = _pack_bits(stored >> 4, _Q6_HIGH_BYTE, _Q6_HIGH_SHIFT, 64)
        out["scales"] = scale.astype(np.int8)
        out["d"] = d
        return out.tobytes()
    raise ValueError(f"not a K-quant type: {type_name}")
