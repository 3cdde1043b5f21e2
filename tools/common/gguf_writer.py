"""A small GGUF v3 writer for the offline tools (golden data, training export).

Written independently of the C++ engine so that the engine's reader is tested against a
second implementation. Quantisation follows GGML's reference quantisers exactly:
  Q8_0: block of 32, fp16 scale d = amax/127, q = round(x/d)            (34 bytes/block)
  Q4_0: block of 32, fp16 scale d = max/-8 (max = value of largest |x|),
        q = min(15, int(x/d + 8.5)); low nibbles hold elements 0..15    (18 bytes/block)
"""
import enum
import struct

import numpy as np

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
    Q8_0 = 8


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
    raise ValueError(f"unsupported type {ggml_type}")


def encode_tensor(array: np.ndarray, ggml_type: GgmlType) -> bytes:
    flat = np.ascontiguousarray(array, dtype=np.float32).reshape(-1)
    if ggml_type == GgmlType.F32:
        return flat.astype("<f4").tobytes()
    if ggml_type == GgmlType.F16:
        return flat.astype("<f2").tobytes()
    if array.shape[-1] % QK != 0:
        raise ValueError(f"row length {array.shape[-1]} is not a multiple of {QK}")
    if ggml_type == GgmlType.Q8_0:
        return quantize_q8_0(flat)
    if ggml_type == GgmlType.Q4_0:
        return quantize_q4_0(flat)
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
