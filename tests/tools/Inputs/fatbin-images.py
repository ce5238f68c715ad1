"""Lists the CUDA fatbins embedded in a file: one line per kind of image,
e.g. "74 fatbins: 74 cubin sm_90, 74 ptx sm_90".

A fatbin is a 16-byte header (magic 0xBA55ED50, u16 version, u16 header
size, u64 size of the images) followed by images, each with its own header:
u16 kind (1 PTX, 2 ELF cubin), u16 version, u32 header size, u64 payload
size, ..., u32 architecture at byte 28 (90 for sm_90).
"""
import collections
import struct
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)
KINDS = {1: "ptx", 2: "cubin"}

data = open(sys.argv[1], "rb").read()
images = collections.Counter()
fatbins = 0
at = data.find(MAGIC)
while at >= 0:
    _, header, size = struct.unpack_from("<HHQ", data, at + 4)
    fatbins += 1
    image = at + header
    while image < at + header + size:
        kind, _, image_header, payload = struct.unpack_from("<HHIQ", data, image)
        arch = struct.unpack_from("<I", data, image + 28)[0]
        images[f"{KINDS.get(kind, f'kind {kind}')} sm_{arch}"] += 1
        image += image_header + payload
    at = data.find(MAGIC, at + header + size)
print(f"{fatbins} fatbins: " +
      ", ".join(f"{n} {what}" for what, n in sorted(images.items())))
