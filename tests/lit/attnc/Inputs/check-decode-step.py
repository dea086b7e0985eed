"""After one `attnc run` of decode-step.attn (state.test): each entry's
position is in [0, L - T] and its cache row at that position is the only
one written (the caches started as zeros). Reads .npy files without NumPy."""
import ast
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path
    major = data[6]
    size_format, start = ("<H", 10) if major == 1 else ("<I", 12)
    (header_size,) = struct.unpack(size_format, data[8:start])
    header = ast.literal_eval(data[start:start + header_size].decode("latin1"))
    body = data[start + header_size:]
    width = int(header["descr"][-1])
    count = len(body) // width
    code = {2: "H", 4: "i"}[width]
    return header["shape"], struct.unpack("<%d%s" % (count, code), body)


directory = sys.argv[1]
_, pos = load(directory + "/step-in/pos.npy")
for name in ["K", "V"]:
    (batch, rows, width), bits = load(directory + "/step-out/%s.npy" % name)
    for b in range(batch):
        assert 0 <= pos[b] <= rows - 1, pos
        for row in range(rows):
            values = bits[(b * rows + row) * width:(b * rows + row + 1) * width]
            written = any(values)
            assert written == (row == pos[b]), (name, b, row, pos)
print("ok")
