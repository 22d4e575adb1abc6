#!/usr/bin/env python3
"""The CUDA build holds machine code (an ELF cubin) for every architecture it was configured for
(CMAKE_CUDA_ARCHITECTURES: 75;80;86;90 by default, FABRIC's Turing and Ampere GPUs and the Hopper
ones the GPU check runs on), so no GPU of the list compiles PTX at load. Reads the fat binaries
embedded in the program (magic 0xBA55ED50: a 16-byte header with the payload's size, then
entries, each a header of kind (1 PTX, 2 ELF), header size, payload size and architecture);
the toolkit's cuobjdump is not needed. No GPU needed.

Usage: architectures.py BINARY "75;80;86;90"
"""
import struct
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)


def entries(data):
    """(kind, sm) of every entry of every embedded fat binary."""
    found, at = [], data.find(MAGIC)
    while at >= 0:
        _, _, header_size, fat_size = struct.unpack_from("<IHHQ", data, at)
        pos, end = at + header_size, at + header_size + fat_size
        while pos + 32 <= end:
            kind, _, entry_header, size = struct.unpack_from("<HHIQ", data, pos)
            sm = struct.unpack_from("<I", data, pos + 28)[0]
            if kind not in (1, 2) or entry_header < 32:
                break
            found.append((kind, sm))
            pos += entry_header + size
        at = data.find(MAGIC, max(end, at + 4))
    return found


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = f.read()
    wanted = [int(a.split("-")[0]) for a in argv[2].split(";") if a]
    found = entries(data)
    machine = sorted({sm for kind, sm in found if kind == 2})
    ptx = sorted({sm for kind, sm in found if kind == 1})
    print(f"{argv[1]}: machine code for sm_{machine}, PTX for compute_{ptx}")
    missing = [a for a in wanted if a not in machine]
    if missing:
        print(f"FAIL: no machine code for sm_{missing} (configured: {argv[2]})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
