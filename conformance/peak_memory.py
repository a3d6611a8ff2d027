"""Peak resident memory of one operation (a decode), measured by the kernel.

torch and numpy allocate outside Python's allocator, so ``tracemalloc`` cannot
see a tensor a decoder builds from a hostile shape. Linux can: ``VmHWM`` in
``/proc/self/status`` is the peak resident set, and writing ``5`` to
``/proc/self/clear_refs`` resets it to the current one. Resident memory is
what an allocation costs once it is touched (an untouched 44 GB
``torch.empty`` costs nothing until used, and fails outright where the
address space is limited, as the fuzz workers' is).

Used by the fuzz harness (every input, so it must be cheap: two ``pread``
and one ``pwrite``, about 30 us) and by the benchmarks' decode-memory probe
(which also trims the heap first, see :func:`trim_heap`).
"""

from __future__ import annotations

import os

__all__ = ["PeakMeter", "trim_heap"]


def trim_heap() -> None:
    """Hand freed heap pages back to the kernel (glibc), so that reusing them counts as growth again.

    Without it, a decode that reuses memory freed earlier but still resident
    raises no peak, and a copy looks free.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


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

    def baseline(self) -> int:
        """Resident bytes at the last :meth:`start`."""
        return self._base

    def growth(self) -> int:
        if not self.available:
            return 0
        return max(0, self._read()[0] - self._base)

    def close(self) -> None:
        if self.available:
            os.close(self._status)
            os.close(self._clear)
            self.available = False
