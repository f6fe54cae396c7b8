#!/usr/bin/env python3
"""Write a TAB-separated transit schedule shaped like the one in write-up 000.

Columns: Route_ID, Branch_Code, Version, Stop, Vehicle_Index, Day, Time. Values come
from a fixed seed, so every run of the same command writes the same bytes.

    python3 bench/gen_transit.py ROWS OUT.tsv [--seed N] [--no-header]
"""
import argparse
import random


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20091027)
    ap.add_argument("--no-header", action="store_true")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    routes = [str(r) for r in range(5, 520)]
    branches = ["", "A", "B", "C", "D", "E", "F"]
    with open(a.out, "w", newline="\n") as f:
        if not a.no_header:
            f.write("Route_ID\tBranch_Code\tVersion\tStop\tVehicle_Index\tDay\tTime\n")
        lines = []
        for _ in range(a.rows):
            route = rnd.choice(routes)
            branch = route + rnd.choice(branches)
            version = rnd.randint(1, 3)
            stop = rnd.randint(1, 15000)
            vehicle = rnd.randint(1, 300)
            day = rnd.randint(1, 7)
            minute = rnd.randint(300, 1800)
            time = "%d:%02d:00" % (minute // 60, minute % 60)
            lines.append(f"{route}\t{branch}\t{version}\t{stop}\t{vehicle}\t{day}\t{time}\n")
            if len(lines) >= 100_000:
                f.writelines(lines)
                lines.clear()
        f.writelines(lines)


if __name__ == "__main__":
    main()
