"""Peak resident memory of one decode, measured by the kernel.

torch and numpy allocate outside Python's allocator, so ``tracemalloc`` cannot
see a tensor a decoder builds from a hostile shape. Linux can: ``VmHWM`` in
``/proc/self/status`` is the peak resident set, and writing ``5`` to
``/proc/self/clear_refs`` resets it to the current one. Resident memory is
what an allocation costs once it is touched (an untouched 44 GB
``torch.empty`` costs nothing until used, and fails outright where the
address space is limited, as the fuzz workers' is).
"""

from __future__ import annotations

import os

__all__ = ["PeakMeter"]


class PeakMeter:
    """``start()`` before a decode, ``growth()`` after it: peak resident bytes above the start.

    On systems without these files (not Linux) ``available`` is False and
    ``growth()`` returns 0.
    """

    def __init__(self) -> None:
        try:
            self._status = os.open("/proc/self/status", os.O_RDONLY)
            self._clear = os.open("/proc/self/clear_refs", os.O_WRONLY)
            self.available = True
        except OSError:
            self.available = False
        self._base = 0

    def _read(self):
        text = os.pread(self._status, 8192, 0)
        hwm = rss = 0
        for line in text.split(b"\n"):
            if line.startswith(b"VmHWM:"):
                hwm = int(line.split()[1]) * 1024
            elif line.startswith(b"VmRSS:"):
                rss = int(line.split()[1]) * 1024
                break  # VmRSS follows VmHWM
        return hwm, rss

    def start(self) -> None:
        if not self.available:
            return
        os.pwrite(self._clear, b"5", 0)
        self._base = self._read()[1]

    def growth(self) -> int:
        if not self.available:
            return 0
        return max(0, self._read()[0] - self._base)

    def close(self) -> None:
        if self.available:
            os.close(self._status)
            os.close(self._clear)
            self.available = False
