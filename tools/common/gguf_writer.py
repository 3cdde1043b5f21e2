"""A small GGUF v3 writer for the offline tools (golden data, training export).

Written independently of the C++ engine so that the engine's reader is tested against a
second implementation. Quantisation follows GGML's reference quantisers exactly:
  Q8_0: block of 32, fp16 scale d = amax/127, q = round(x/d)            (34 bytes/block)
  Q4_0: block of 32, fp16 scale d = max/-8 (max = value of largest |x|),
        q = min(15, int(x/d + 8.5)); low nibbles hold elements 0..15    (18 bytes/block)
  Q4_1: block of 32, fp16 d = (max-min)/15 and fp16 m = min,
        q = min(15, int((x-min)/d + 0.5)); value = q*d + m              (20 bytes/block)
  Q5_0: block of 32, fp16 d = max/-16, q = min(31, int(x/d + 16.5)); the fifth bits in a
        little-endian uint32 qh (bit j = element j), low nibbles as Q4_0 (22 bytes/block)
  Q5_1: block of 32, fp16 d = (max-min)/31, fp16 m = min, q = int((x-min)/d + 0.5),
        bits stored as Q5_0; value = q*d + m                             (24 bytes/block)
  BF16: the top 16 bits of the float32, rounded to nearest even; NaNs quieted
  Q2_K .. Q6_K: super-blocks of 256, see kquants.py (layouts, and its own quantiser)
"""
import enum
import struct

import numpy as np

import kquants

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
QK = 32  # elements per Q8_0 / Q4_0 block


class ValueType(enum.IntEnum):
    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


class GgmlType(enum.IntEnum):
    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    BF16 = 30


_SCALAR_FORMATS = {
    ValueType.UINT8: "<B", ValueType.INT8: "<b", ValueType.UINT16: "<H",
    ValueType.INT16: "<h", ValueType.UINT32: "<I", ValueType.INT32: "<i",
    ValueType.FLOAT32: "<f", ValueType.BOOL: "<?", ValueType.UINT64: "<Q",
    ValueType.INT64: "<q", ValueType.FLOAT64: "<d",
}


def quantize_q8_0(x: np.ndarray) -> bytes:
    """GGML's quantize_row_q8_0_reference on a float32 array whose size is a multiple of 32."""
    blocks = x.astype(np.float32).reshape(-1, QK)
    amax = np.abs(blocks).max(axis=1)
    d = amax / 127.0
    inv = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0.0).astype(np.float32)
    # GGML uses roundf (half away from zero), not numpy's round-half-to-even.
    scaled = blocks * inv[:, None]
    q = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int8)
    out = np.zeros(len(blocks), dtype=[("d", "<f2"), ("qs", "i1", QK)])
    out["d"] = d.astype(np.float16)
    out["qs"] = q
    return out.tobytes()


def quantize_q4_0(x: np.ndarray) -> bytes:
    """GGML's quantize_row_q4_0_reference on a float32 array whose size is a multiple of 32."""
    blocks = x.astype(np.float32).reshape(-1, QK)
    idx = np.abs(blocks).argmax(axis=1)  # first index of the largest magnitude, as GGML's loop
    vmax = blocks[np.arange(len(blocks)), idx]
    d = (vmax / -8.0).astype(np.float32)
    inv = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0.0).astype(np.float32)
    q = np.minimum(15, (blocks * inv[:, None] + 8.5).astype(np.int8)).astype(np.uint8)
    packed = q[:, :QK // 2] | (q[:, QK // 2:] << 4)
    out = np.zeros(len(blocks), dtype=[("d", "<f2"), ("qs", "u1", QK // 2)])
    out["d"] = d.astype(np.float16)
    out["qs"] = packed
    return out.tobytes()


_F32 = np.float32


def _inverse(d: np.ndarray) -> np.ndarray:
    """1/d in float32, 0 where d is 0 (GGML's `id = d ? 1.0f/d : 0.0f`)."""
    return np.where(d != 0, _F32(1.0) / np.where(d != 0, d, _F32(1)), _F32(0)).astype(_F32)


def _trunc_int8(v: np.ndarray) -> np.ndarray:
    """C's (int8_t) cast of an in-range float: truncation toward zero."""
    return np.trunc(v).astype(np.int32)


def _pack_nibbles(q: np.ndarray) -> np.ndarray:
    """Elements 0..15 in the low nibbles, 16..31 in the high ones."""
    return ((q[:, :QK // 2] & 0x0F) | ((q[:, QK // 2:] & 0x0F) << 4)).astype(np.uint8)


def _pack_high_bits(q: np.ndarray) -> np.ndarray:
    """Bit 4 of element j at bit j of a little-endian uint32, as 4 bytes per block."""
    bits = ((q >> 4) & 1).astype(np.uint64)
    qh = (bits << np.arange(QK, dtype=np.uint64)).sum(axis=1).astype("<u4")
    return qh.view(np.uint8).reshape(-1, 4)


def _min_max(blocks: np.ndarray):
    return blocks.min(axis=1).astype(_F32), blocks.max(axis=1).astype(_F32)


def quantize_q4_1(x: np.ndarray) -> bytes:
    """GGML's quantize_row_q4_1_ref on a float32 array whose size is a multiple of 32."""
    blocks = x.astype(_F32).reshape(-1, QK)
    mn, mx = _min_max(blocks)
    d = ((mx - mn) / _F32(15)).astype(_F32)
    inv = _inverse(d)
    q = np.minimum(15, _trunc_int8((blocks - mn[:, None]) * inv[:, None] + _F32(0.5)))
    out = np.zeros(len(blocks), dtype=[("d", "<f2"), ("m", "<f2"), ("qs", "u1", QK // 2)])
    out["d"] = d.astype(np.float16)
    out["m"] = mn.astype(np.float16)
    out["qs"] = _pack_nibbles(q)
    return out.tobytes()


def quantize_q5_0(x: np.ndarray) -> bytes:
    """GGML's quantize_row_q5_0_ref on a float32 array whose size is a multiple of 32."""
    blocks = x.astype(_F32).reshape(-1, QK)
    idx = np.abs(blocks).argmax(axis=1)
    vmax = blocks[np.arange(len(blocks)), idx]
    d = (vmax / _F32(-16)).astype(_F32)
    inv = _inverse(d)
    q = np.minimum(31, _trunc_int8(blocks * inv[:, None] + _F32(16.5)))
    out = np.zeros(len(blocks), dtype=[("d", "<f2"), ("qh", "u1", 4), ("qs", "u1", QK // 2)])
    out["d"] = d.astype(np.float16)
    out["qh"] = _pack_high_bits(q)
    out["qs"] = _pack_nibbles(q)
    return out.tobytes()


def quantize_q5_1(x: np.ndarray) -> bytes:
    """GGML's quantize_row_q5_1_ref on a float32 array whose size is a multiple of 32."""
    blocks = x.astype(_F32).reshape(-1, QK)
    mn, mx = _min_max(blocks)
    d = ((mx - mn) / _F32(31)).astype(_F32)
    inv = _inverse(d)
    q = _trunc_int8((blocks - mn[:, None]) * inv[:, None] + _F32(0.5))
    out = np.zeros(len(blocks),
                   dtype=[("d", "<f2"), ("m", "<f2"), ("qh", "u1", 4), ("qs", "u1", QK // 2)])
    out["d"] = d.astype(np.float16)
    out["m"] = mn.astype(np.float16)
    out["qh"] = _pack_high_bits(q)
    out["qs"] = _pack_nibbles(q)
    return out.tobytes()


def encode_bf16(x: np.ndarray) -> bytes:
    """GGML's ggml_compute_fp32_to_bf16: round to nearest even, NaNs quieted."""
    bits = x.astype("<f4").view("<u4").astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    out = np.where(nan, (bits >> 16) | 64, rounded).astype("<u2")
    return out.tobytes()


_K_TYPES = (GgmlType.Q2_K, GgmlType.Q3_K, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int32)


def _high_bits(qh: np.ndarray) -> np.ndarray:
    word = qh.copy().view("<u4").astype(np.int64)  # (blocks, 1)
    return ((word >> np.arange(QK)) & 1).astype(np.int32) << 4


def dequantize(data: bytes, ggml_type: GgmlType, n: int) -> np.ndarray:
    """Float32 values of n elements stored as ggml_type (the reference the engine must match)."""
    if ggml_type == GgmlType.F32:
        return np.frombuffer(data, dtype="<f4", count=n).copy()
    if ggml_type == GgmlType.F16:
        return np.frombuffer(data, dtype="<f2", count=n).astype(np.float32)
    if ggml_type == GgmlType.Q8_0:
        b = np.frombuffer(data, dtype=[("d", "<f2"), ("qs", "i1", QK)], count=n // QK)
        return (b["d"].astype(np.float32)[:, None] * b["qs"].astype(np.float32)).reshape(-1)
    if ggml_type == GgmlType.Q4_0:
        b = np.frombuffer(data, dtype=[("d", "<f2"), ("qs", "u1", QK // 2)], count=n // QK)
        lo = (b["qs"] & 0x0F).astype(np.int32) - 8
        hi = (b["qs"] >> 4).astype(np.int32) - 8
        q = np.concatenate([lo, hi], axis=1).astype(np.float32)
        return (b["d"].astype(np.float32)[:, None] * q).reshape(-1)
    if ggml_type == GgmlType.BF16:
        bits = np.frombuffer(data, dtype="<u2", count=n).astype(np.uint32) << 16
        return bits.view(np.float32).copy()
    if ggml_type == GgmlType.Q4_1:
        b = np.frombuffer(data, dtype=[("d", "<f2"), ("m", "<f2"), ("qs", "u1", QK // 2)],
                          count=n // QK)
        q = _nibbles(b["qs"]).astype(_F32)
        return (q * b["d"].astype(_F32)[:, None] + b["m"].astype(_F32)[:, None]).reshape(-1)
    if ggml_type == GgmlType.Q5_0:
        b = np.frombuffer(data, dtype=[("d", "<f2"), ("qh", "u1", 4), ("qs", "u1", QK // 2)],
                          count=n // QK)
        q = ((_nibbles(b["qs"]) | _high_bits(b["qh"])) - 16).astype(_F32)
        return (q * b["d"].astype(_F32)[:, None]).reshape(-1)
    if ggml_type == GgmlType.Q5_1:
        b = np.frombuffer(data, dtype=[("d", "<f2"), ("m", "<f2"), ("qh", "u1", 4),
                                       ("qs", "u1", QK // 2)], count=n // QK)
        q = (_nibbles(b["qs"]) | _high_bits(b["qh"])).astype(_F32)
        return (q * b["d"].astype(_F32)[:, None] + b["m"].astype(_F32)[:, None]).reshape(-1)
    if ggml_type in _K_TYPES:
        return kquants.dequantize(data, ggml_type.name, n)
    raise ValueError(f"unsupported type {ggml_type}")


def encode_tensor(array: np.ndarray, ggml_type: GgmlType) -> bytes:
    flat = np.ascontiguousarray(array, dtype=np.float32).reshape(-1)
    if ggml_type == GgmlType.F32:
        return flat.astype("<f4").tobytes()
    if ggml_type == GgmlType.F16:
        return flat.astype("<f2").tobytes()
    if ggml_type == GgmlType.BF16:
        return encode_bf16(flat)
    if ggml_type in _K_TYPES:
        if array.shape[-1] % kquants.QK_K != 0:
            raise ValueError(f"row length {array.shape[-1]} is not a multiple of {kquants.QK_K}")
        return kquants.quantize(flat, ggml_type.name)
    if array.shape[-1] % QK != 0:
        raise ValueError(f"row length {array.shape[-1]} is not a multiple of {QK}")
    if ggml_type == GgmlType.Q8_0:
        return quantize_q8_0(flat)
    if ggml_type == GgmlType.Q4_0:
        return quantize_q4_0(flat)
    if ggml_type == GgmlType.Q4_1:
        return quantize_q4_1(flat)
    if ggml_type == GgmlType.Q5_0:
        return quantize_q5_0(flat)
    if ggml_type == GgmlType.Q5_1:
        return quantize_q5_1(flat)
    raise ValueError(f"unsupported type {ggml_type}")


class GgufWriter:
    """Collects metadata and tensors, then writes one GGUF v3 file.

    Metadata values are given with their GGUF type: add(key, ValueType.UINT32, 5),
    add_array(key, ValueType.STRING, ["a", "b"]). Tensors are numpy arrays in PyTorch order
    (rows, cols); GGUF stores the shape reversed (ne[0] = cols, the contiguous dimension).
    """

    def __init__(self, alignment: int = 32):
        self.alignment = alignment
        self.metadata: list[tuple[str, ValueType, object, ValueType | None]] = []
        self.tensors: list[tuple[str, tuple[int, ...], GgmlType, bytes]] = []
        if alignment != 32:
            self.add("general.alignment", ValueType.UINT32, alignment)

    def add(self, key: str, value_type: ValueType, value) -> None:
        self.metadata.append((key, value_type, value, None))

    def add_array(self, key: str, element_type: ValueType, values) -> None:
        self.metadata.append((key, ValueType.ARRAY, list(values), element_type))

    def add_tensor(self, name: str, array: np.ndarray, ggml_type: GgmlType) -> bytes:
        """Stores the tensor; returns its encoded bytes (dequantize() them for references)."""
        data = encode_tensor(array, ggml_type)
        self.tensors.append((name, tuple(array.shape), ggml_type, data))
        return data

    @staticmethod
    def _string(s: str) -> bytes:
        raw = s.encode("utf-8")
        return struct.pack("<Q", len(raw)) + raw

    def _value(self, value_type: ValueType, value, element_type=None) -> bytes:
        if value_type == ValueType.STRING:
            return self._string(value)
        if value_type == ValueType.ARRAY:
            out = struct.pack("<IQ", element_type, len(value))
            return out + b"".join(self._value(element_type, v) for v in value)
        return struct.pack(_SCALAR_FORMATS[value_type], value)

    def _pad(self, n: int) -> int:
        return (n + self.alignment - 1) // self.alignment * self.alignment

    def to_bytes(self) -> bytes:
        header = bytearray(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(self.tensors),
                                                    len(self.metadata)))
        for key, value_type, value, element_type in self.metadata:
            header += self._string(key) + struct.pack("<I", value_type)
            header += self._value(value_type, value, element_type)
        offset = 0
        offsets = []
        for name, shape, ggml_type, data in self.tensors:
            dims = list(reversed(shape))
            header += self._string(name) + struct.pack("<I", len(dims))
            header += struct.pack(f"<{len(dims)}Q", *dims)
            header += struct.pack("<IQ", ggml_type, offset)
            offsets.append(offset)
            offset = self._pad(offset + len(data))
        body = bytearray(header)
        body += b"\0" * (self._pad(len(body)) - len(body))
        data_start = len(body)
        for (name, shape, ggml_type, data), off in zip(self.tensors, offsets):
            body += b"\0" * (data_start + off - len(body))
            body += data
        return bytes(body)

    def write(self, path) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())
