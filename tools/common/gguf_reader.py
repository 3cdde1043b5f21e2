"""A small GGUF v3 reader for the offline tools, independent of the C++ engine.

read_gguf_raw() returns the metadata and each tensor's stored bytes; read_gguf() also decodes
the tensors with gguf_writer.dequantize, so the arrays are exactly what the file stores.
"""
import pathlib
import struct

import numpy as np

from gguf_writer import GgmlType, ValueType, dequantize

_SCALAR_FORMATS = {
    ValueType.UINT8: "<B", ValueType.INT8: "<b", ValueType.UINT16: "<H",
    ValueType.INT16: "<h", ValueType.UINT32: "<I", ValueType.INT32: "<i",
    ValueType.FLOAT32: "<f", ValueType.BOOL: "<?", ValueType.UINT64: "<Q",
    ValueType.INT64: "<q", ValueType.FLOAT64: "<d",
}
_BLOCK = {GgmlType.F32: (1, 4), GgmlType.F16: (1, 2), GgmlType.Q8_0: (32, 34),
          GgmlType.Q4_0: (32, 18), GgmlType.Q4_1: (32, 20), GgmlType.Q5_0: (32, 22),
          GgmlType.Q5_1: (32, 24), GgmlType.BF16: (1, 2),
          GgmlType.Q2_K: (256, 84), GgmlType.Q3_K: (256, 110), GgmlType.Q4_K: (256, 144),
          GgmlType.Q5_K: (256, 176), GgmlType.Q6_K: (256, 210)}  # (elements, bytes) per block


def stored_bytes(ggml_type: GgmlType, n: int) -> int:
    elements, nbytes = _BLOCK[ggml_type]
    return n // elements * nbytes


def read_gguf_raw(path):
    """(metadata {key: value}, tensors {name: (shape in PyTorch order, type, bytes, offset)})."""
    data = pathlib.Path(path).read_bytes()
    pos = 0

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return values

    def string():
        nonlocal pos
        (n,) = take("<Q")
        pos += n
        return data[pos - n:pos].decode("utf-8")

    def value(vtype):
        if vtype == ValueType.STRING:
            return string()
        if vtype == ValueType.ARRAY:
            etype, n = take("<IQ")
            return [value(etype) for _ in range(n)]
        return take(_SCALAR_FORMATS[ValueType(vtype)])[0]

    magic, version, n_tensors, n_kv = take("<4sIQQ")
    if magic != b"GGUF" or version != 3:
        raise ValueError(f"{path}: not a GGUF v3 file")
    metadata = {}
    for _ in range(n_kv):
        key = string()
        (vtype,) = take("<I")
        metadata[key] = value(vtype)
    alignment = metadata.get("general.alignment", 32)
    infos = []
    for _ in range(n_tensors):
        name = string()
        (n_dims,) = take("<I")
        dims = take(f"<{n_dims}Q")
        ggml_type, offset = take("<IQ")
        infos.append((name, tuple(reversed(dims)), GgmlType(ggml_type), offset))
    data_start = (pos + alignment - 1) // alignment * alignment
    tensors = {}
    for name, shape, ggml_type, offset in infos:
        start = data_start + offset
        raw = data[start:start + stored_bytes(ggml_type, int(np.prod(shape)))]
        tensors[name] = (shape, ggml_type, raw, offset)
    return metadata, tensors


def read_gguf(path):
    """(metadata, tensors {name: float32 numpy array in PyTorch order})."""
    metadata, raw = read_gguf_raw(path)
    tensors = {name: dequantize(data, ggml_type, int(np.prod(shape))).reshape(shape)
               for name, (shape, ggml_type, data, _) in raw.items()}
    return metadata, tensors
