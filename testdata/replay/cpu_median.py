#!/usr/bin/env python3
"""Median CPU time of a command run n times (BENCHMARKS.md, replay start-up).

    python3 testdata/replay/cpu_median.py N CMD [ARG...]

Runs CMD N times, its output discarded, and prints the median user,
system and total CPU milliseconds from getrusage(RUSAGE_CHILDREN).
The kernel charges CPU in ticks, so one run's split is coarse: compare
medians, with the binaries alternated.
"""
import resource
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n, cmd = int(sys.argv[1]), sys.argv[2:]
    user, system = [], []
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        user.append((after.ru_utime - before.ru_utime) * 1000)
        system.append((after.ru_stime - before.ru_stime) * 1000)
    total = [u + s for u, s in zip(user, system)]
    print("user %.1f sys %.1f total %.1f ms (median of %d)"
          % (statistics.median(user), statistics.median(system), statistics.median(total), n))


if __name__ == "__main__":
    main()
